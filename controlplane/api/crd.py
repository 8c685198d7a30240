"""CustomResourceDefinitions (apiextensions.k8s.io/v1): kinds users bring.

- `validate_crd(obj, old)`: names, scope, versions (exactly one storage
  version, at least one served), structural openAPIV3Schema, subresources,
  printer columns, conversion None only. Wired into validation.VALIDATORS.
- `default_crd(obj)`: the defaults and status kube-apiserver fills in
  (singular, listKind, conversion, acceptedNames, storedVersions, the
  NamesAccepted and Established conditions).
- `register(obj)` / `unregister(name)`: serve a validated CRD's kind from
  now on as a run-time row of controlplane.api.kinds (always group-qualified:
  key `Kind.group`, stored under `plural.group`), or stop serving it.
- For custom objects: `validate_object(key, obj)` against the structural
  schema of the object's version (types, required, enum, bounds, pattern,
  nullable, x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields),
  `default_object(key, obj)` (schema defaults, then pruning of unknown
  fields), `printer_columns(key, version)`, and the scale subresource
  (`scale_paths`).

Pure apart from the process-wide table of registered CRDs (thread-safe).
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from controlplane.api import jsonpath, kinds, patch_meta
from controlplane.api.jsoncodec import clone

Object = dict[str, Any]

GROUP = "apiextensions.k8s.io"
KIND = "CustomResourceDefinition"

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_KIND_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_TYPES = ("object", "array", "string", "integer", "number", "boolean")
_COLUMN_TYPES = ("integer", "number", "string", "boolean", "date")
# Keywords a structural schema may not use (Kubernetes' list).
_FORBIDDEN = ("$ref", "definitions", "dependencies", "id", "patternProperties", "additionalItems")


@dataclass(frozen=True)
class ServedVersion:
    """One served version of a registered CRD."""

    key: str  # the kinds key of its kind
    group: str
    version: str
    kind: str
    schema: Object
    storage: bool
    printer_columns: tuple[Object, ...] = ()
    status: bool = False
    scale: Object | None = None


@dataclass
class _Crd:
    name: str
    info: kinds.KindInfo
    spec: Object
    versions: dict[str, ServedVersion] = field(default_factory=dict)


_lock = threading.Lock()
_by_name: dict[str, _Crd] = {}
_by_key: dict[str, _Crd] = {}
_generation = 0  # bumped on every change, so derived documents can be cached


def generation() -> int:
    """A number that changes whenever the set of registered CRDs changes."""
    return _generation


# ---- validation of the CRD ----------------------------------------------------------


class _Errors:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, problem: str) -> None:
        self.items.append(f"{path}: {problem}")


def _names(e: _Errors, spec: Object, metadata_name: str) -> None:
    group = spec.get("group")
    if not isinstance(group, str) or not group:
        e.add("spec.group", "required")
    elif not _DNS_SUBDOMAIN.match(group) or "." not in group:
        e.add("spec.group", "must be a DNS subdomain with at least one dot (example.com)")
    names = spec.get("names")
    if not isinstance(names, dict):
        e.add("spec.names", "required")
        return
    plural = names.get("plural")
    for key in ("plural", "singular"):
        value = names.get(key)
        if value is not None and (not isinstance(value, str) or not _DNS_LABEL.match(value)):
            e.add(f"spec.names.{key}", "must be a lowercase DNS label")
    if not plural:
        e.add("spec.names.plural", "required")
    for key in ("kind", "listKind"):
        value = names.get(key)
        if value is not None and (not isinstance(value, str) or not _KIND_NAME.match(value)):
            e.add(
                f"spec.names.{key}", "must be a CamelCase name starting with an upper-case letter"
            )
    if not names.get("kind"):
        e.add("spec.names.kind", "required")
    for key in ("shortNames", "categories"):
        values = names.get(key, [])
        if not isinstance(values, list) or not all(
            isinstance(v, str) and _DNS_LABEL.match(v) for v in values
        ):
            e.add(f"spec.names.{key}", "must be a list of lowercase DNS labels")
    if plural and group and metadata_name != f"{plural}.{group}":
        e.add("metadata.name", f"must be spec.names.plural + '.' + spec.group ({plural}.{group})")
    for k in kinds.KINDS:
        if k.group == group and k.plural == plural:
            e.add("spec.names.plural", f"{plural}.{group} is a built-in resource")
        if k.group == group and k.kind == names.get("kind"):
            e.add("spec.names.kind", f"{k.kind} is a built-in kind of {group}")


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
        if not isinstance(name, str) or not _DNS_LABEL.match(name):
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
        problems: list[str] = []
        _check(s, s["default"], "", problems)
        for problem in problems:
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
    strategy = (spec.get("conversion") or {}).get("strategy", "None")
    if strategy != "None":
        e.add("spec.conversion.strategy", "only None is supported (no conversion webhooks)")
    if spec.get("preserveUnknownFields") is True:
        e.add("spec.preserveUnknownFields", "must be false in apiextensions.k8s.io/v1")
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


# ---- the table of served CRDs -------------------------------------------------------------


def kind_info(obj: Object) -> kinds.KindInfo:
    """The kinds row a valid CRD serves. Always group-qualified (key
    `Kind.group`, stored under `plural.group`): a Kind name is not unique
    across groups, and a key must not depend on which CRDs came first."""
    spec = obj["spec"]
    names = spec["names"]
    group = spec["group"]
    versions = [v for v in spec["versions"] if v.get("served")]
    storage = next((v for v in versions if v.get("storage")), versions[0])
    others = tuple(f"{group}/{v['name']}" for v in versions if v is not storage)
    subresources = storage.get("subresources") or {}
    return kinds.KindInfo(
        kind=names["kind"],
        api_version=f"{group}/{storage['name']}",
        plural=names["plural"],
        singular=names.get("singular") or names["kind"].lower(),
        short_names=tuple(names.get("shortNames") or ()),
        namespaced=spec["scope"] == "Namespaced",
        has_status="status" in subresources,
        has_scale="scale" in subresources,
        also_api_versions=others,
        qualified=True,
        categories=tuple(names.get("categories") or ()),
    )


def register(obj: Object) -> kinds.KindInfo:
    """Serve the kind a (stored, valid) CRD defines; replaces an earlier
    registration of the same CRD (a no-op when its spec is unchanged, as
    on a status update). Raises ValueError for an invalid CRD."""
    global _generation
    name = str((obj.get("metadata") or {}).get("name", ""))
    current = _by_name.get(name)
    if current is not None and current.spec == obj.get("spec"):
        return current.info
    problems = validate_crd(obj)
    if problems:
        raise ValueError("; ".join(problems))
    info = kind_info(obj)
    crd = _Crd(name, info, clone(obj["spec"]))
    for v in obj["spec"]["versions"]:
        if not v.get("served"):
            continue
        sub = v.get("subresources") or {}
        crd.versions[v["name"]] = ServedVersion(
            key=info.key,
            group=info.group,
            version=v["name"],
            kind=info.kind,
            schema=clone(v["schema"]["openAPIV3Schema"]),
            storage=bool(v.get("storage")),
            printer_columns=tuple(clone(v.get("additionalPrinterColumns") or [])),
            status="status" in sub,
            scale=clone(sub["scale"]) if "scale" in sub else None,
        )
    facts: dict[str, patch_meta.FieldMeta] = {}
    for v in crd.versions.values():
        _list_facts(v.schema, "", facts)
    with _lock:
        old = _by_name.get(name)
        if old is not None and old.info.key != info.key:
            kinds.unregister(old.info.key)
            patch_meta.set_custom(old.info.key, {})
            _by_key.pop(old.info.key, None)
        kinds.register(info)
        patch_meta.set_custom(info.key, facts)
        _by_name[name] = crd
        _by_key[info.key] = crd
        _generation += 1
    return info


def _list_facts(s: Any, path: str, out: dict[str, patch_meta.FieldMeta]) -> None:
    """Merge facts of a schema's lists, by field path (list items add no
    segment, as in patch_meta): x-kubernetes-list-type map with one key, or set."""
    if not isinstance(s, dict):
        return
    list_type = s.get("x-kubernetes-list-type")
    keys = s.get("x-kubernetes-list-map-keys") or []
    if s.get("type") == "array" and path:
        if list_type == "map" and len(keys) == 1:
            out[path] = patch_meta.FieldMeta("merge", str(keys[0]))
        elif list_type == "set":
            out[path] = patch_meta.FieldMeta("merge")
        _list_facts(s.get("items"), path, out)
        return
    for key, sub in (s.get("properties") or {}).items():
        _list_facts(sub, f"{path}.{key}" if path else key, out)


def unregister(name: str) -> kinds.KindInfo | None:
    """Stop serving the kind of the CRD named `name`; the row it had (None
    if it was not served)."""
    global _generation
    with _lock:
        crd = _by_name.pop(name, None)
        if crd is None:
            return None
        _by_key.pop(crd.info.key, None)
        kinds.unregister(crd.info.key)
        patch_meta.set_custom(crd.info.key, {})
        _generation += 1
        return crd.info


def is_custom(key: str) -> bool:
    return key in _by_key


def served_versions() -> list[ServedVersion]:
    with _lock:
        return [v for crd in _by_name.values() for v in crd.versions.values()]


def _version(key: str, obj_or_version: Object | str | None) -> ServedVersion | None:
    crd = _by_key.get(key)
    if crd is None:
        return None
    if isinstance(obj_or_version, dict):
        version = str(obj_or_version.get("apiVersion", "")).rpartition("/")[2]
    else:
        version = obj_or_version or crd.info.version
    return crd.versions.get(version) or crd.versions.get(crd.info.version)


def printer_columns(key: str, version: str | None = None) -> list[Object] | None:
    """The additionalPrinterColumns of a custom kind's version (None: not custom)."""
    v = _version(key, version)
    return None if v is None else list(v.printer_columns)


def scale_paths(key: str, version: str | None = None) -> Object | None:
    """The scale subresource's specReplicasPath, statusReplicasPath and
    labelSelectorPath of a custom kind, None when it has none."""
    v = _version(key, version)
    return None if v is None else v.scale


def _at(obj: Any, path: str) -> Any:
    for part in path.strip(".").split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def scale_of(key: str, obj: Object) -> Object | None:
    """The autoscaling/v1 Scale of a custom object (None: no scale subresource)."""
    paths = scale_paths(key, obj.get("apiVersion", "").rpartition("/")[2] or None)
    if paths is None:
        return None
    meta = obj.get("metadata") or {}
    spec_replicas = _at(obj, paths["specReplicasPath"])
    status_replicas = _at(obj, paths["statusReplicasPath"])
    status: Object = {"replicas": status_replicas if isinstance(status_replicas, int) else 0}
    if paths.get("labelSelectorPath"):
        selector = _at(obj, paths["labelSelectorPath"])
        if isinstance(selector, str):
            status["selector"] = selector
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": spec_replicas if isinstance(spec_replicas, int) else 0},
        "status": status,
    }


def replicas_patch(key: str, replicas: int, version: str | None = None) -> Object | None:
    """A JSON merge patch setting a custom object's replicas at its
    specReplicasPath (None: no scale subresource)."""
    paths = scale_paths(key, version)
    if paths is None:
        return None
    patch: Object = {}
    node = patch
    parts = str(paths["specReplicasPath"]).strip(".").split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = replicas
    return patch


# ---- custom objects -----------------------------------------------------------------


def validate_object(key: str, obj: Object) -> list[str]:
    """Every way `obj` breaks its version's structural schema, as `path: problem`."""
    crd = _by_key.get(key)
    if crd is None:
        return []
    version = str(obj.get("apiVersion", "")).rpartition("/")[2]
    served = crd.versions.get(version)
    if served is None:
        return [f"apiVersion: {obj.get('apiVersion')!r} is not a served version of {crd.info.kind}"]
    problems: list[str] = []
    body = {k: val for k, val in obj.items() if k not in _ROOT_FIELDS}
    _check(_root(served.schema), body, "", problems)
    return problems


def _type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _check(s: Object, value: Any, path: str, problems: list[str]) -> None:
    where = path or "<root>"
    if value is None:
        if not s.get("nullable"):
            problems.append(f"{where}: must not be null")
        return
    got = _type_of(value)
    want = s.get("type")
    if s.get("x-kubernetes-int-or-string"):
        if got not in ("integer", "string"):
            problems.append(f"{where}: must be an integer or a string, got {got}")
            return
    elif want and not (got == want or (want == "number" and got == "integer")):
        problems.append(f"{where}: must be of type {want}, got {got}")
        return
    if "enum" in s and value not in s["enum"]:
        allowed = ", ".join(repr(x) for x in s["enum"])
        problems.append(f"{where}: unsupported value {value!r}: supported values: {allowed}")
    if got in ("integer", "number"):
        _bounds(s, value, where, problems)
    if got == "string":
        if "maxLength" in s and len(value) > s["maxLength"]:
            problems.append(f"{where}: may not be longer than {s['maxLength']}")
        if "minLength" in s and len(value) < s["minLength"]:
            problems.append(f"{where}: should be at least {s['minLength']} chars long")
        if "pattern" in s and not re.search(s["pattern"], value):
            problems.append(f"{where}: should match '{s['pattern']}'")
    if got == "array":
        if "maxItems" in s and len(value) > s["maxItems"]:
            problems.append(f"{where}: must have at most {s['maxItems']} items")
        if "minItems" in s and len(value) < s["minItems"]:
            problems.append(f"{where}: should have at least {s['minItems']} items")
        items = s.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                _check(items, item, f"{path}[{i}]", problems)
        _unique(s, value, where, problems)
    if got == "object":
        _check_object(s, value, path, where, problems)
    for key in ("allOf", "anyOf", "oneOf"):
        options = s.get(key)
        if isinstance(options, list):
            results = [_sub_problems(o, value, path) for o in options]
            passed = sum(1 for r in results if not r)
            if key == "allOf":
                for r in results:
                    problems.extend(r)
            elif key == "anyOf" and options and passed == 0:
                problems.append(f"{where}: must match at least one schema in anyOf")
            elif key == "oneOf" and options and passed != 1:
                problems.append(f"{where}: must match exactly one schema in oneOf")
    if isinstance(s.get("not"), dict) and not _sub_problems(s["not"], value, path):
        problems.append(f"{where}: must not match the schema in not")


def _unique(s: Object, items: list[Any], where: str, problems: list[str]) -> None:
    """x-kubernetes-list-type set (unique values) and map (unique keys)."""
    list_type = s.get("x-kubernetes-list-type")
    if list_type == "set":
        seen: list[Any] = []
        for i, item in enumerate(items):
            if item in seen:
                problems.append(f"{where}[{i}]: Duplicate value: {item!r}")
            seen.append(item)
    elif list_type == "map":
        keys = s.get("x-kubernetes-list-map-keys") or []
        seen_keys: set[str] = set()
        for i, item in enumerate(items):
            if isinstance(item, dict):
                ident = repr([item.get(k) for k in keys])
                if ident in seen_keys:
                    problems.append(f"{where}[{i}]: Duplicate value: map keys {ident}")
                seen_keys.add(ident)


def _sub_problems(s: Any, value: Any, path: str) -> list[str]:
    out: list[str] = []
    if isinstance(s, dict):
        _check({**s, "nullable": True} if value is None else s, value, path, out)
    return out


def _bounds(s: Object, value: float, where: str, problems: list[str]) -> None:
    if "maximum" in s:
        limit = s["maximum"]
        if value > limit or (s.get("exclusiveMaximum") and value == limit):
            op = "less than" if s.get("exclusiveMaximum") else "less than or equal to"
            problems.append(f"{where}: should be {op} {limit}")
    if "minimum" in s:
        limit = s["minimum"]
        if value < limit or (s.get("exclusiveMinimum") and value == limit):
            op = "greater than" if s.get("exclusiveMinimum") else "greater than or equal to"
            problems.append(f"{where}: should be {op} {limit}")
    multiple = s.get("multipleOf")
    if multiple and not math.isclose(value / multiple, round(value / multiple)):
        problems.append(f"{where}: must be a multiple of {multiple}")


def _check_object(s: Object, value: Object, path: str, where: str, problems: list[str]) -> None:
    for key in s.get("required") or []:
        if key not in value:
            problems.append(f"{path + '.' if path else ''}{key}: Required value")
    if "maxProperties" in s and len(value) > s["maxProperties"]:
        problems.append(f"{where}: must have at most {s['maxProperties']} properties")
    if "minProperties" in s and len(value) < s["minProperties"]:
        problems.append(f"{where}: must have at least {s['minProperties']} properties")
    props = s.get("properties") or {}
    extra = s.get("additionalProperties")
    for key, child in value.items():
        child_path = f"{path}.{key}" if path else key
        if key in props:
            _check(props[key], child, child_path, problems)
        elif isinstance(extra, dict):
            _check(extra, child, child_path, problems)


_ROOT_FIELDS = ("apiVersion", "kind", "metadata")


def _root(schema: Object) -> Object:
    """The root schema with apiVersion, kind and metadata left to the server:
    kept as an embedded resource keeps them, never defaulted or pruned here."""
    props = {k: v for k, v in (schema.get("properties") or {}).items() if k not in _ROOT_FIELDS}
    return {**schema, "properties": props, "x-kubernetes-embedded-resource": True}


def default_object(key: str, obj: Object) -> None:
    """Apply the schema's defaults, then prune fields the schema does not
    know (unless x-kubernetes-preserve-unknown-fields), in place."""
    v = _version(key, obj)
    if v is None:
        return
    root = _root(v.schema)
    _default(root, obj)
    _prune(root, obj, "", None)


def unknown_fields(key: str, obj: Object) -> list[str]:
    """The paths pruning would drop from `obj`: what `fieldValidation=Strict`
    reports as unknown fields of a custom object (`obj` is not changed)."""
    v = _version(key, obj)
    if v is None:
        return []
    found: list[str] = []
    _prune(_root(v.schema), clone(obj), "", found)
    return found


def _default(s: Object, value: Any) -> Any:
    if isinstance(value, dict):
        for key, sub in (s.get("properties") or {}).items():
            if not isinstance(sub, dict):
                continue
            if key not in value and "default" in sub:
                value[key] = clone(sub["default"])
            if key in value and value[key] is not None:
                value[key] = _default(sub, value[key])
        extra = s.get("additionalProperties")
        if isinstance(extra, dict):
            props = s.get("properties") or {}
            for key in value:
                if key not in props and value[key] is not None:
                    value[key] = _default(extra, value[key])
    elif isinstance(value, list) and isinstance(s.get("items"), dict):
        return [_default(s["items"], item) if item is not None else item for item in value]
    return value


def _prune(s: Object, value: Any, path: str, removed: list[str] | None) -> Any:
    """`value` without the fields schema `s` does not know; their paths are
    appended to `removed` when given."""
    if isinstance(value, dict):
        props = s.get("properties") or {}
        extra = s.get("additionalProperties")
        preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
        embedded = s.get("x-kubernetes-embedded-resource") is True
        for key in list(value):
            where = f"{path}.{key}" if path else key
            sub = props.get(key)
            if isinstance(sub, dict):
                value[key] = _prune(sub, value[key], where, removed)
            elif isinstance(extra, dict):
                value[key] = _prune(extra, value[key], where, removed)
            elif not (preserve or extra is True or (embedded and key in _ROOT_FIELDS)):
                del value[key]
                if removed is not None:
                    removed.append(where)
    elif isinstance(value, list) and isinstance(s.get("items"), dict):
        return [_prune(s["items"], item, f"{path}[{i}]", removed) for i, item in enumerate(value)]
    return value
