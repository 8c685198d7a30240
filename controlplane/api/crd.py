"""CustomResourceDefinitions (apiextensions.k8s.io/v1): the table of the
kinds users brought, and what the server does with their objects.

- `register(obj)` / `unregister(name)`: serve a validated CRD's kind from
  now on as a run-time row of controlplane.api.kinds (always group-qualified:
  key `Kind.group`, stored under `plural.group`), or stop serving it.
- For custom objects: `validate_object(key, obj)` against the structural
  schema of the object's version, `default_object(key, obj)` (schema
  defaults, then pruning of unknown fields), `unknown_fields`,
  `printer_columns(key, version)`, and the scale subresource
  (`scale_paths`, `scale_of`, `replicas_patch`).

The CRD object's own validation and defaulting: controlplane.api.crd_validation;
values against a schema: controlplane.api.structural. Both are imported at
the first CRD served or custom object written: a control plane without
CustomResourceDefinitions never holds them.

Pure apart from the process-wide table of registered CRDs (thread-safe).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from controlplane.api import crd_versions, kinds, patch_meta
from controlplane.api.checks import Errors
from controlplane.api.jsoncodec import clone
from controlplane.api.kinds.definition import KindDef

Object = dict[str, Any]

GROUP = "apiextensions.k8s.io"
KIND = "CustomResourceDefinition"


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
    deprecation: str = ""  # the Warning a request at a deprecated version gets ("": none)
    served: bool = True  # False: the storage version, not served


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


# ---- the table of served CRDs -------------------------------------------------------------


def kind_info(obj: Object) -> kinds.KindInfo:
    """The kinds row a valid CRD serves. Always group-qualified (key
    `Kind.group`, stored under `plural.group`): a Kind name is not unique
    across groups, and a key must not depend on which CRDs came first."""
    spec = obj["spec"]
    names = spec["names"]
    group = spec["group"]
    versions = [v for v in spec["versions"] if v.get("served")]
    # Objects are stored in the storage version, served or not.
    storage = next((v for v in spec["versions"] if v.get("storage")), versions[0])
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
    from controlplane.api.crd_validation import validate_crd  # at the first CRD (docstring)

    problems = validate_crd(obj)
    if problems:
        raise ValueError("; ".join(problems))
    from controlplane.api.crd_validation import served_builtin

    builtin = served_builtin(obj["spec"])
    if builtin is not None:  # Volcano's CRD of a kind skiff serves: not served twice
        return builtin
    info = kind_info(obj)
    crd = _Crd(name, info, clone(obj["spec"]))
    spec = crd.spec
    for v in spec["versions"]:
        if not v.get("served") and not v.get("storage"):
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
            deprecation=crd_versions.deprecation_warning(spec, v),
            served=bool(v.get("served")),
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
        kinds.register(_definition(info, spec))
        patch_meta.set_custom(info.key, facts)
        _by_name[name] = crd
        _by_key[info.key] = crd
        _generation += 1
    return info


def _definition(info: kinds.KindInfo, spec: Object) -> KindDef:
    """The kinds registry's entry of a custom kind: its objects validated
    against, defaulted and pruned by their version's structural schema,
    converted between its served versions and the stored one."""
    key = info.key

    def tidy(obj: Object) -> None:
        default_object(key, obj)

    def validate(e: Errors, obj: Object, old: Object | None) -> None:
        e.items.extend(validate_object(key, obj))

    def defaults(obj: Object) -> None:
        default_object(key, obj)

    conversions = crd_versions.conversions(spec, info.version, tidy)
    unserved = tuple(f"{info.group}/{v['name']}" for v in spec["versions"] if not v.get("served"))
    return _CustomKindDef(
        info, defaults=defaults, validate=validate, conversions=conversions, unserved=unserved
    )


@dataclass(frozen=True, eq=False, repr=False)
class _CustomKindDef(KindDef):
    """A custom kind: its storage version may be one that is not served."""

    unserved: tuple[str, ...] = ()

    def served_versions(self) -> tuple[str, ...]:
        return tuple(v for v in super().served_versions() if v not in self.unserved)


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
        return [v for crd in _by_name.values() for v in crd.versions.values() if v.served]


def _version(key: str, obj_or_version: Object | str | None) -> ServedVersion | None:
    crd = _by_key.get(key)
    if crd is None:
        return None
    if isinstance(obj_or_version, dict):
        version = str(obj_or_version.get("apiVersion", "")).rpartition("/")[2]
    else:
        version = obj_or_version or crd.info.version
    return crd.versions.get(version) or crd.versions.get(crd.info.version)


def deprecation_warning(key: str, version: str) -> str:
    """The Warning for a request at `version` of a custom kind, when its CRD
    marks that version deprecated (its deprecationWarning, else Kubernetes'
    `group/version Kind is deprecated`); "" otherwise."""
    crd = _by_key.get(key)
    served = crd.versions.get(version) if crd is not None else None
    return served.deprecation if served is not None else ""


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
    from controlplane.api import structural  # at the first custom object (docstring)

    body = {k: val for k, val in obj.items() if k not in structural.ROOT_FIELDS}
    return structural.check(structural.root(served.schema), body)


def default_object(key: str, obj: Object) -> None:
    """Apply the schema's defaults, then prune fields the schema does not
    know (unless x-kubernetes-preserve-unknown-fields), in place."""
    v = _version(key, obj)
    if v is None:
        return
    from controlplane.api import structural  # at the first custom object (docstring)

    root = structural.root(v.schema)
    structural.apply_defaults(root, obj)
    structural.prune(root, obj, "", None)


def unknown_fields(key: str, obj: Object) -> list[str]:
    """The paths pruning would drop from `obj`: what `fieldValidation=Strict`
    reports as unknown fields of a custom object (`obj` is not changed)."""
    v = _version(key, obj)
    if v is None:
        return []
    found: list[str] = []
    from controlplane.api import structural  # at the first custom object (docstring)

    structural.prune(structural.root(v.schema), clone(obj), "", found)
    return found
