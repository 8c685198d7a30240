"""What the API server checks and fills in on a CustomResourceDefinition
(apiextensions.k8s.io/v1) itself.

- `validate_crd(obj, old)`: names, scope, versions (exactly one storage
  version, at least one served), structural openAPIV3Schema (a default
  must be valid against its own schema), subresources, printer columns,
  conversion None only. The CustomResourceDefinition kind's definition
  (kinds/apiextensions/customresourcedefinition.py) uses them.
- `default_crd(obj)`: the defaults and status kube-apiserver fills in
  (singular, listKind, conversion, acceptedNames, storedVersions, the
  NamesAccepted and Established conditions).

Pure: the served CRDs are controlplane.api.crd's.
"""

from __future__ import annotations

import json
import re
from typing import Any

from controlplane.api import jsonpath, kinds, structural
from controlplane.api.dnsnames import DNS1123_LABEL, DNS1123_SUBDOMAIN
from controlplane.api.jsoncodec import clone

Object = dict[str, Any]

# Kubernetes checks a kind lower-cased as a DNS-1035 label: any case, so a
# kind may start lower-case (lightkube's e2e CRDs do).
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MESSAGE = (
    "may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower"
    " case alphanumeric characters or '-', start with an alphabetic character, and end with an"
    " alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is"
    " '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_TYPES = ("object", "array", "string", "integer", "number", "boolean")
_COLUMN_TYPES = ("integer", "number", "string", "boolean", "date")
# Keywords a structural schema may not use (Kubernetes' list).
_FORBIDDEN = ("$ref", "definitions", "dependencies", "id", "patternProperties", "additionalItems")


class _Errors:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, problem: str) -> None:
        self.items.append(f"{path}: {problem}")


def _names(e: _Errors, spec: Object, metadata_name: str) -> None:
    group = spec.get("group")
    if not isinstance(group, str) or not group:
        e.add("spec.group", "required")
    elif not DNS1123_SUBDOMAIN.match(group) or "." not in group:
        e.add("spec.group", "must be a DNS subdomain with at least one dot (example.com)")
    names = spec.get("names")
    if not isinstance(names, dict):
        e.add("spec.names", "required")
        return
    plural = names.get("plural")
    for key in ("plural", "singular"):
        value = names.get(key)
        if value is not None and (not isinstance(value, str) or not DNS1123_LABEL.match(value)):
            e.add(f"spec.names.{key}", "must be a lowercase DNS label")
    if not plural:
        e.add("spec.names.plural", "required")
    for key in ("kind", "listKind"):
        value = names.get(key)
        if value is not None and (
            not isinstance(value, str) or len(value) > 63 or not _DNS1035_LABEL.match(value.lower())
        ):
            e.add(f"spec.names.{key}", f"Invalid value: {json.dumps(value)}: {_DNS1035_MESSAGE}")
    if not names.get("kind"):
        e.add("spec.names.kind", "required")
    for key in ("shortNames", "categories"):
        values = names.get(key, [])
        if not isinstance(values, list) or not all(
            isinstance(v, str) and DNS1123_LABEL.match(v) for v in values
        ):
            e.add(f"spec.names.{key}", "must be a list of lowercase DNS labels")
    if plural and group and metadata_name != f"{plural}.{group}":
        e.add("metadata.name", f"must be spec.names.plural + '.' + spec.group ({plural}.{group})")
    for k in kinds.builtin_kinds():
        if k.group == group and k.plural == plural:
            e.add("spec.names.plural", f"{plural}.{group} is a built-in resource{_why(group)}")
        if k.group == group and k.kind == names.get("kind"):
            e.add("spec.names.kind", f"{k.kind} is a built-in kind of {group}")


# Volcano's API groups skiff serves itself (its batch scheduler and Volcano's
# controllers run in the control plane): what a second Volcano's install is told.
VOLCANO_GROUPS = ("scheduling.volcano.sh", "batch.volcano.sh", "bus.volcano.sh")


def _why(group: str) -> str:
    if group not in VOLCANO_GROUPS:
        return ""
    return (
        ": skiff serves Volcano's API and runs its scheduler and controllers itself, "
        "so a second Volcano is not needed beside it (its scheduler would compete with "
        "skiff's for the same pods)"
    )


def _versions(e: _Errors, spec: Object) -> None:
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        e.add("spec.versions", "must have at least one version")
        return
    seen: set[str] = set()
    storage = 0
    served = 0
    for i, v in enumerate(versions):
        path = f"spec.versions[{i}]"
        if not isinstance(v, dict):
            e.add(path, "must be an object")
            continue
        name = v.get("name")
        if not isinstance(name, str) or not DNS1123_LABEL.match(name):
            e.add(f"{path}.name", "must be a DNS label (v1, v1beta1, ...)")
        elif name in seen:
            e.add(f"{path}.name", f"duplicate version {name}")
        else:
            seen.add(name)
        for flag in ("served", "storage"):
            if not isinstance(v.get(flag), bool):
                e.add(f"{path}.{flag}", "required (true or false)")
        storage += v.get("storage") is True
        served += v.get("served") is True
        schema = (
            (v.get("schema") or {}).get("openAPIV3Schema")
            if isinstance(v.get("schema"), dict)
            else None
        )
        if not isinstance(schema, dict):
            e.add(f"{path}.schema.openAPIV3Schema", "required: a structural schema")
        else:
            _structural(e, f"{path}.schema.openAPIV3Schema", schema, root=True)
        _subresources(e, f"{path}.subresources", v.get("subresources"))
        _columns(e, f"{path}.additionalPrinterColumns", v.get("additionalPrinterColumns"))
    if storage != 1:
        e.add("spec.versions", f"exactly one version must be the storage version (found {storage})")
    if served == 0:
        e.add("spec.versions", "at least one version must be served")


def _structural(e: _Errors, path: str, s: Any, root: bool = False) -> None:
    """Kubernetes' structural schema rules, with the paths of the offending nodes."""
    if not isinstance(s, dict):
        e.add(path, "must be a schema object")
        return
    for key in _FORBIDDEN:
        if key in s:
            e.add(f"{path}.{key}", "not allowed in a structural schema")
    if s.get("uniqueItems") is True:
        e.add(f"{path}.uniqueItems", "cannot be true in a structural schema")
    t = s.get("type")
    int_or_string = s.get("x-kubernetes-int-or-string") is True
    preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
    if t is None:
        if not int_or_string and not preserve:
            e.add(f"{path}.type", "must not be empty for specified fields")
    elif t not in _TYPES:
        e.add(f"{path}.type", f"must be one of {', '.join(_TYPES)}")
    if root and t != "object":
        e.add(f"{path}.type", "must be object at the root")
    if "properties" in s and "additionalProperties" in s and s["additionalProperties"] is not False:
        e.add(path, "properties and additionalProperties are mutually exclusive")
    if t == "array" and not isinstance(s.get("items"), dict):
        e.add(f"{path}.items", "must be specified for an array")
    if "default" in s and root:
        e.add(f"{path}.default", "not allowed at the root")
    elif "default" in s:
        for problem in structural.check(s, s["default"]):
            e.add(f"{path}.default", problem.removeprefix("<root>: "))
    for key, sub in (s.get("properties") or {}).items():
        if root and key == "metadata" and isinstance(sub, dict):
            extra = set(sub.get("properties") or {}) - {"name", "generateName"}
            if extra or sub.get("type") not in (None, "object"):
                e.add(f"{path}.properties.metadata", "may only restrict name and generateName")
        _structural(e, f"{path}.properties.{key}", sub)
    if isinstance(s.get("items"), dict):
        _structural(e, f"{path}.items", s["items"])
    if isinstance(s.get("additionalProperties"), dict):
        _structural(e, f"{path}.additionalProperties", s["additionalProperties"])
    for key in ("allOf", "anyOf", "oneOf"):
        if key in s and not isinstance(s[key], list):
            e.add(f"{path}.{key}", "must be a list of schemas")


def _subresources(e: _Errors, path: str, sub: Any) -> None:
    if sub is None:
        return
    if not isinstance(sub, dict):
        e.add(path, "must be an object")
        return
    unknown = set(sub) - {"status", "scale"}
    if unknown:
        e.add(path, f"unknown subresources {sorted(unknown)} (status, scale)")
    scale = sub.get("scale")
    if scale is not None:
        if not isinstance(scale, dict):
            e.add(f"{path}.scale", "must be an object")
            return
        for key, prefixes in (
            ("specReplicasPath", (".spec.",)),
            ("statusReplicasPath", (".status.",)),
            ("labelSelectorPath", (".spec.", ".status.")),
        ):
            value = scale.get(key)
            if value is None and key == "labelSelectorPath":
                continue
            if not isinstance(value, str) or not value.startswith(prefixes):
                e.add(f"{path}.scale.{key}", f"must be a JSON path under {' or '.join(prefixes)}")


def _columns(e: _Errors, path: str, columns: Any) -> None:
    if columns is None:
        return
    if not isinstance(columns, list):
        e.add(path, "must be a list")
        return
    for i, c in enumerate(columns):
        where = f"{path}[{i}]"
        if not isinstance(c, dict):
            e.add(where, "must be an object")
            continue
        if not c.get("name") or not isinstance(c.get("name"), str):
            e.add(f"{where}.name", "required")
        if c.get("type") not in _COLUMN_TYPES:
            e.add(f"{where}.type", f"must be one of {', '.join(_COLUMN_TYPES)}")
        json_path = c.get("jsonPath")
        if not isinstance(json_path, str) or not json_path:
            e.add(f"{where}.jsonPath", "required")
        else:
            try:
                jsonpath.values(json_path, {})
            except jsonpath.JsonPathError as err:
                e.add(f"{where}.jsonPath", f"invalid JSONPath: {err}")
        if "priority" in c and (not isinstance(c["priority"], int) or c["priority"] < 0):
            e.add(f"{where}.priority", "must be a non-negative integer")


API_APPROVED = "api-approved.kubernetes.io"
_APPROVAL_HELP = "see https://github.com/kubernetes/enhancements/pull/1111"


def protected_group(group: str) -> bool:
    """A group only Kubernetes' own API reviews may add kinds to."""
    return group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))


def _api_approval(e: _Errors, obj: Object, old: Object | None) -> None:
    """Kubernetes' rule for CRDs of protected groups: the approval annotation,
    a URL (the approving review) or a reason starting with "unapproved"; an
    update that leaves a bad one as it was is let through, as Kubernetes does."""
    group = str((obj.get("spec") or {}).get("group") or "")
    if not protected_group(group):
        return
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(API_APPROVED)
    path = f"metadata.annotations[{API_APPROVED}]"
    if value is None or value == "":
        e.add(path, f'Required value: protected groups must have approval annotation '
                    f'"{API_APPROVED}", {_APPROVAL_HELP}')  # fmt: skip
        return
    text = str(value)
    if text.startswith("unapproved") or re.match(r"^[a-z][a-z0-9+.-]*://[^/\s]+\S*$|^/\S*$", text):
        return
    before = ((old or {}).get("metadata") or {}).get("annotations") or {}
    if old is not None and before.get(API_APPROVED) == value:
        return
    e.add(path, f'Invalid value: "{text}": protected groups must have approval annotation '
                f'"{API_APPROVED}" with either a URL or a reason starting with "unapproved", '
                f"{_APPROVAL_HELP}")  # fmt: skip


def _rule_errors(spec: Object) -> list[str]:
    """x-kubernetes-validations (CEL) checked where a schema has any: paths as
    kube-apiserver's (spec.validation when every version has one schema)."""
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict)]
    schemas = [(v.get("schema") or {}).get("openAPIV3Schema") for v in versions]
    if "x-kubernetes-validations" not in repr(schemas):
        return []
    from controlplane.api.cel import crd_rules  # the CEL engine, at the first rule

    if all(s == schemas[0] for s in schemas):
        return crd_rules.schema_errors(schemas[0], "spec.validation.openAPIV3Schema")
    errors: list[str] = []
    for i, schema in enumerate(schemas):
        errors += crd_rules.schema_errors(schema, f"spec.versions[{i}].schema.openAPIV3Schema")
    return errors


def validate_crd(obj: Object, old: Object | None = None) -> list[str]:
    """Every problem with a CustomResourceDefinition as `path: problem`."""
    e = _Errors()
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return ["spec: required"]
    _names(e, spec, str((obj.get("metadata") or {}).get("name", "")))
    scope = spec.get("scope")
    if scope not in ("Namespaced", "Cluster"):
        e.add("spec.scope", "must be Namespaced or Cluster")
    _versions(e, spec)
    e.items.extend(_rule_errors(spec))
    strategy = (spec.get("conversion") or {}).get("strategy", "None")
    if strategy != "None":
        e.add("spec.conversion.strategy", "only None is supported (no conversion webhooks)")
    if spec.get("preserveUnknownFields") is True:
        e.add("spec.preserveUnknownFields", "must be false in apiextensions.k8s.io/v1")
    _api_approval(e, obj, old)
    if old is not None:
        old_spec = old.get("spec") or {}
        for key in ("group", "scope"):
            if old_spec.get(key) != spec.get(key):
                e.add(f"spec.{key}", "field is immutable")
        if (old_spec.get("names") or {}).get("plural") != (spec.get("names") or {}).get("plural"):
            e.add("spec.names.plural", "field is immutable")
    return e.items


def default_crd(obj: Object) -> None:
    """Fill in what kube-apiserver fills in, in place: names.singular and
    listKind and conversion, and a status that says the names are
    accepted and the CRD is established (skiff serves it at once)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("names"), dict):
        return
    names = spec["names"]
    kind = names.get("kind")
    if isinstance(kind, str):
        names.setdefault("singular", kind.lower())
        names.setdefault("listKind", f"{kind}List")
    spec.setdefault("conversion", {"strategy": "None"})
    status = obj.setdefault("status", {})
    status["acceptedNames"] = clone(names)
    status["storedVersions"] = sorted(
        set(status.get("storedVersions") or [])
        | {
            str(v.get("name"))
            for v in spec.get("versions") or []
            if isinstance(v, dict) and v.get("storage")
        }
    )
    status["conditions"] = [
        {
            "type": t,
            "status": "True",
            "reason": reason,
            "message": message,
        }
        for t, reason, message in (
            ("NamesAccepted", "NoConflicts", "no conflicts found"),
            ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        )
    ]
