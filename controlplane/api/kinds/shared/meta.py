"""metadata: the rules and the schema every kind's objects share (Kubernetes'
ObjectMeta, OwnerReference, ManagedFieldsEntry and LabelSelector).

`validate(e, info, obj, name_rule)`: metadata.name by the kind's rule (a
DNS-1123 subdomain, a label, or an RBAC path segment), the namespace by
scope, labels, annotations, ownerReferences (one controller at most) and
finalizers. Pure.
"""

from __future__ import annotations

from typing import Any

from controlplane.api import rbac
from controlplane.api.checks import (
    Errors,
    annotation_map,
    each_object,
    is_qualified_name,
    items,
    label_map,
    mapping,
    name,
)
from controlplane.api.kinds.info import KindInfo
from controlplane.api.schema import META, Type, declare

Object = dict[str, Any]


def validate(e: Errors, info: KindInfo, obj: Object, name_rule: str = "subdomain") -> None:
    meta: Any = obj.get("metadata")
    if not mapping(e, "metadata", meta, required=True):
        return
    assert isinstance(meta, dict)
    value: Any = meta.get("name")
    if name_rule == "path-segment" and (value or not meta.get("generateName")):
        if not isinstance(value, str) or not rbac.is_path_segment_name(value):
            e.add("metadata.name", f"{value!r} must be a path segment (no '/' or '%')")
    elif value or not meta.get("generateName"):
        name(e, "metadata.name", value, label=name_rule == "label")
    namespace: Any = meta.get("namespace")
    if info.namespaced:
        name(e, "metadata.namespace", namespace, label=True)
    elif namespace:
        e.add("metadata.namespace", f"not allowed: {info.kind} is cluster-scoped")
    if "labels" in meta:
        label_map(e, "metadata.labels", meta["labels"])
    if "annotations" in meta:
        annotation_map(e, "metadata.annotations", meta["annotations"])
    refs: Any = meta.get("ownerReferences")
    if items(e, "metadata.ownerReferences", refs):
        controllers = 0
        for path, ref in each_object(e, "metadata.ownerReferences", refs, required=True):
            for field in ("apiVersion", "kind", "name", "uid"):
                if not ref.get(field):
                    e.add(f"{path}.{field}", "required")
            if ref.get("controller"):
                controllers += 1
        if controllers > 1:
            e.add("metadata.ownerReferences", "only one reference can have controller set to true")
    finalizers: Any = meta.get("finalizers")
    if items(e, "metadata.finalizers", finalizers):
        for i, f in enumerate(finalizers):
            if not isinstance(f, str) or not is_qualified_name(f):
                e.add(f"metadata.finalizers[{i}]", f"invalid finalizer name {f!r}")


TYPES: dict[str, Type] = {
    **declare(
        META,
        """
        ObjectMeta: ObjectMeta is metadata that all persisted resources must have, which includes
                    all objects users must create.
            name                        string                Name must be unique within a
                                                              namespace. Cannot be updated.
            generateName                string                An optional prefix used by the server
                                                              to generate a unique name.
            namespace                   string                Namespace defines the space within
                                                              which each name must be unique.
            selfLink                    string                Deprecated: selfLink is a legacy
                                                              read-only field.
            uid                         string                UID is the unique in time and space
                                                              value for this object. Read-only.
            resourceVersion             string                An opaque value that represents the
                                                              internal version of this object.
            generation                  integer               A sequence number representing a
                                                              specific generation of the desired
                                                              state.
            creationTimestamp           time                  The server time when this object was
                                                              created. Read-only.
            deletionTimestamp           time                  RFC 3339 date and time at which this
                                                              resource will be deleted.
            deletionGracePeriodSeconds  integer               Seconds allowed for this object to
                                                              gracefully terminate.
            labels                      map                   Map of string keys and values used to
                                                              organize and categorize objects.
            annotations                 map                   An unstructured key value map stored
                                                              with a resource by external tools.
            ownerReferences             []OwnerReference      Objects this object depends on.
            finalizers                  []string              Must be empty before the object is
                                                              deleted from the registry.
            managedFields               []ManagedFieldsEntry  Which manager owns which fields
                                                              (server-side apply).
        OwnerReference: OwnerReference contains enough information to let you identify an owning
                        object.
            apiVersion!         string   API version of the referent.
            kind!               string   Kind of the referent.
            name!               string   Name of the referent.
            uid!                string   UID of the referent.
            controller          boolean  If true, this reference points to the managing controller.
            blockOwnerDeletion  boolean  If true, the owner cannot be deleted before this object.
        ManagedFieldsEntry: ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of
                            the resource that the fieldset applies to.
            manager      string  Manager is an identifier of the workflow managing these fields.
            operation    string  The type of operation which lead to this entry: Apply or Update.
            apiVersion   string  The version of the resource this field set applies to.
            time         time    When this entry was last changed.
            fieldsType   string  The format of fieldsV1: FieldsV1.
            fieldsV1     object  The set of fields this manager owns.
            subresource  string  The subresource the object was updated through.
        LabelSelector: A label selector is a label query over a set of resources.
            matchLabels       map       A map of {key,value} pairs, each ANDed with the others.
            matchExpressions  []object  A list of label selector requirements, ANDed.
        """,
    ),
}


def add_finalizer(obj: Object, finalizer: str) -> None:
    """metadata.finalizers with `finalizer` added (once), in place (admission)."""
    meta = obj.setdefault("metadata", {})
    finalizers = meta.setdefault("finalizers", [])
    if isinstance(finalizers, list) and finalizer not in finalizers:
        finalizers.append(finalizer)
