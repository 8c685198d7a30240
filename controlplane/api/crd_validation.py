"""What the API server checks and fills in on a CustomResourceDefinition
(apiextensions.k8s.io/v1) itself.

- `validate_crd(obj, old)`: names, scope, versions (exactly one storage
  version, at least one served), structural openAPIV3Schema (a default
  must be valid against its own schema), subresources, printer columns,
  conversion None or Webhook (its clientConfig), status.storedVersions. The CustomResourceDefinition kind's definition
  (kinds/apiextensions/customresourcedefinition.py) uses them.
- `default_crd(obj)`: the defaults and status kube-apiserver fills in
  (singular, listKind, conversion, acceptedNames, storedVersions, the
  NamesAccepted and Established conditions).

Pure: the served CRDs are controlplane.api.crd's.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from typing import Any

from controlplane.api import crd_versions, jsonpath, kinds, structural
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
    if served_builtin(spec) is not None:
        return  # Volcano's own CRD of a kind skiff serves: kept, not served (below)
    for k in kinds.builtin_kinds():
        if k.group == group and k.plural == plural:
            e.add("spec.names.plural", f"{plural}.{group} is a built-in resource")
        if k.group == group and k.kind == names.get("kind"):
            e.add("spec.names.kind", f"{k.kind} is a built-in kind of {group}")


# Volcano's API groups skiff serves itself (its batch scheduler and Volcano's
# controllers run in the control plane).
VOLCANO_GROUPS = ("scheduling.volcano.sh", "batch.volcano.sh", "bus.volcano.sh")


def served_builtin(spec: Any) -> kinds.KindInfo | None:
    """The built-in kind a CRD re-declares, when it is one of Volcano's kinds
    that skiff serves itself (same group, plural and kind: Volcano's install
    manifests). Such a CRD is stored, as kube-apiserver stores a CRD whatever
    else serves its group, and the built-in kind keeps serving."""
    if not isinstance(spec, dict) or spec.get("group") not in VOLCANO_GROUPS:
        return None
    names = spec.get("names")
    if not isinstance(names, dict):
        return None
    for k in kinds.builtin_kinds():
        if (k.group, k.plural, k.kind) == (spec["group"], names.get("plural"), names.get("kind")):
            return k
    return None


def builtin_warning(info: kinds.KindInfo) -> str:
    """What a client storing such a CRD is told."""
    return (
        f"{info.plural}.{info.group}: skiff serves Volcano's API and runs its scheduler and "
        "controllers itself: this CustomResourceDefinition is stored, and the built-in "
        f"{info.kind} keeps serving (a second Volcano scheduler would compete with skiff's "
        "for the same pods)"
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


_REVIEW_VERSIONS = ("v1", "v1beta1")


def _conversion(e: _Errors, conversion: Any) -> None:
    """spec.conversion, with kube-apiserver's messages."""
    if conversion is None:
        return
    if not isinstance(conversion, dict):
        e.add("spec.conversion", "must be an object")
        return
    strategy = conversion.get("strategy", "None")
    webhook = conversion.get("webhook")
    if strategy not in ("None", "Webhook"):
        e.add("spec.conversion.strategy", f'Unsupported value: {json.dumps(strategy)}: '
                                          'supported values: "None", "Webhook"')  # fmt: skip
        return
    if strategy == "None":
        if webhook is not None:
            e.add("spec.conversion.webhook",
                  "Forbidden: should not be set when strategy is not set to Webhook")  # fmt: skip
        return
    if not isinstance(webhook, dict):
        e.add("spec.conversion.webhook", "Required value")
        return
    path = "spec.conversion.webhook.conversionReviewVersions"
    versions = webhook.get("conversionReviewVersions")
    if not versions:
        e.add(path, "Required value: must include at least one of v1, v1beta1")
    elif not isinstance(versions, list) or not any(v in _REVIEW_VERSIONS for v in versions):
        e.add(path, f"Invalid value: {json.dumps(versions)}: must include at least one of v1, "
                    "v1beta1")  # fmt: skip
    _client_config(e, "spec.conversion.webhook.clientConfig", webhook.get("clientConfig"))


def _client_config(e: _Errors, path: str, config: Any) -> None:
    """A webhook's clientConfig: exactly one of an https url or a service."""
    if not isinstance(config, dict):
        e.add(path, "Required value")
        return
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        e.add(path, "Required value: exactly one of url or service is required")
        return
    if url is not None:
        parsed = urllib.parse.urlsplit(str(url))
        problem = (
            "'https' is the only allowed URL scheme" if parsed.scheme != "https"
            else "host must be specified" if not parsed.hostname
            else "user information is not permitted in the URL" if parsed.username
            else "fragments are not permitted in the URL" if parsed.fragment
            else "query parameters are not permitted in the URL" if parsed.query
            else ""
        )  # fmt: skip
        if problem:
            e.add(f"{path}.url", f"Invalid value: {json.dumps(url)}: {problem}")
        return
    if not isinstance(service, dict):
        e.add(f"{path}.service", "must be an object")
        return
    for key in ("namespace", "name"):
        if not service.get(key):
            e.add(f"{path}.service.{key}", "Required value: service " + key + " is required")
    port = service.get("port", 443)
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        e.add(f"{path}.service.port", f"Invalid value: {json.dumps(port)}: "
                                      "port is not valid: must be between 1 and 65535")  # fmt: skip
    svc_path = service.get("path")
    if svc_path is not None and (not isinstance(svc_path, str) or not svc_path.startswith("/")):
        e.add(f"{path}.service.path", f"Invalid value: {json.dumps(svc_path)}: "
                                      "must start with a '/'")  # fmt: skip


def _stored_versions(e: _Errors, obj: Object) -> None:
    """status.storedVersions: every one still in spec.versions, the storage
    version among them (kube-apiserver's ValidateCustomResourceDefinitionStoredVersions):
    a version objects may still be stored in cannot leave the spec."""
    stored = (obj.get("status") or {}).get("storedVersions") or []
    versions = [v for v in (obj.get("spec") or {}).get("versions") or [] if isinstance(v, dict)]
    names = {v.get("name") for v in versions}
    if not stored:
        e.add("status.storedVersions", "Invalid value: []: must have at least one stored version")
        return
    for i, name in enumerate(stored):
        if name not in names:
            e.add(f"status.storedVersions[{i}]",
                  f"Invalid value: {json.dumps(name)}: must appear in spec.versions")  # fmt: skip
    storage = next((v.get("name") for v in versions if v.get("storage") is True), None)
    if storage is not None and storage not in stored:
        e.add("status.storedVersions",
              f"Invalid value: {json.dumps(stored)}: must have the storage version {storage}")  # fmt: skip


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
    _conversion(e, spec.get("conversion"))
    if spec.get("preserveUnknownFields") is True:
        e.add("spec.preserveUnknownFields", "must be false in apiextensions.k8s.io/v1")
    _api_approval(e, obj, old)
    if old is not None or (obj.get("status") or {}).get("storedVersions"):
        _stored_versions(e, obj)
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
    status["storedVersions"] = crd_versions.stored_versions(status, spec)
    webhook = (spec.get("conversion") or {}).get("webhook")
    service = ((webhook or {}).get("clientConfig") or {}).get("service")
    if isinstance(service, dict):
        service.setdefault("port", 443)
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
