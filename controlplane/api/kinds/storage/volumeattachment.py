"""VolumeAttachment (storage.k8s.io/v1, cluster-scoped, status
subresource): the intent to attach a volume to a node, and the attacher's
outcome.

Validation as Kubernetes' ValidateVolumeAttachment: spec.attacher a CSI
driver name, spec.nodeName required, spec.source exactly one of
persistentVolumeName and inlineVolumeSpec; the spec is immutable; status
attachError/detachError messages are strings. Columns: NAME ATTACHER PV
NODE ATTACHED AGE.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors, mapping
from controlplane.api.display import age, name
from controlplane.api.dnsnames import is_dns_subdomain
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.storage._csi import STORAGE, driver_name
from controlplane.api.schema import declare

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    spec: Any = obj.get("spec")
    if not mapping(e, "spec", spec, required=True):
        return
    driver_name(e, "spec.attacher", spec.get("attacher"))
    node = spec.get("nodeName")
    if not isinstance(node, str) or not node:
        e.required("spec.nodeName")
    elif not is_dns_subdomain(node):
        e.invalid("spec.nodeName", node, "a lowercase RFC 1123 subdomain must consist of "
                  "lower case alphanumeric characters, '-' or '.', and must start and end with "
                  "an alphanumeric character")  # fmt: skip
    source: Any = spec.get("source")
    if mapping(e, "spec.source", source, required=True):
        given = [k for k in ("persistentVolumeName", "inlineVolumeSpec") if source.get(k)]
        if len(given) != 1:
            e.add("spec.source", "Required value: must specify exactly one of "
                  "persistentVolumeName and inlineVolumeSpec")  # fmt: skip
    if old is not None and old.get("spec") != spec:
        e.invalid("spec", spec, "field is immutable")


def row(obj: Object, now: float, wide: bool) -> list[str]:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return [
        name(obj),
        str(spec.get("attacher") or ""),
        str((spec.get("source") or {}).get("persistentVolumeName") or ""),
        str(spec.get("nodeName") or ""),
        "true" if status.get("attached") else "false",
        age(obj, now),
    ]


DEFINITION = KindDef(
    KindInfo("VolumeAttachment", "storage.k8s.io/v1", namespaced=False),
    types={
        **declare(
            STORAGE,
            """
            VolumeAttachment [storage.k8s.io/v1 VolumeAttachment]: VolumeAttachment captures the
                    intent to attach or detach the specified volume to/from the specified node.
                spec!   VolumeAttachmentSpec
                status  VolumeAttachmentStatus
            VolumeAttachmentSpec: VolumeAttachmentSpec is the specification of a VolumeAttachment
                                  request.
                attacher!  string  attacher indicates the name of the volume driver that MUST handle
                                   this request.
                source!    object  source represents the volume that should be attached.
                nodeName!  string  nodeName represents the node that the volume should be attached
                                   to.
            VolumeAttachmentStatus: VolumeAttachmentStatus is the status of a VolumeAttachment
                                    request.
                attached!           boolean  attached indicates the volume is successfully attached.
                attachmentMetadata  map      attachmentMetadata is populated with any information
                                             returned by the attach operation.
                attachError         object   attachError represents the last error encountered
                                             during attach operation, if any.
                detachError         object   detachError represents the last error encountered
                                             during detach operation, if any.
            """,
        ),
    },
    validate=validate,
    printer=Printer(columns(("NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE")), row),
)
