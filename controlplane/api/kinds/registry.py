"""The kinds registry: every kind the control plane serves, and name lookup.

The built-in kinds are the `DEFINITION`s of the modules of this package's
group packages (core/, apps/, batch/, ...): they are found, not listed, so a
new kind is one new module. They are loaded at the first lookup, not at
import: importing this package loads only the definition type.
Kinds may be added and removed at run time (`register`, `unregister`:
CustomResourceDefinitions); lookups always see the current table. The
built-in kinds of a whole group may be withdrawn (`withdraw_groups`: the
metrics API when `--disable metrics-server`, as a k3s without its
metrics-server addon serves no metrics.k8s.io); the table is the process's,
as the run-time kinds are.

`lookup()` turns whatever a user typed (kind, plural, singular or short
name, any case, optionally `plural.group`) into a row, or raises
UnknownKind listing what is supported.

A Kind name is not unique across groups (batch/v1 Job and Volcano's
batch.volcano.sh Job; CustomResourceDefinitions bring any name). Every row
has a `key`: the name the registry, the gRPC API and the clients use for it.
It is the Kind name for the built-in kinds (so nothing stored or sent
changes), and `Kind.group` for a kind whose name another group already owns
(`qualified=True`, e.g. "Job.batch.volcano.sh"), which is also how kubectl
spells it. Where two rows answer to one name, the earlier row wins: the
built-in kinds in ORDER, then the others by group package and module name,
then run-time kinds.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Collection, Mapping

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.schema import Type

_PACKAGE = __name__.rpartition(".")[0]

# The order the kinds served before this package existed were listed in
# (discovery, `kubectl api-resources`, the supported-kinds list); kinds
# added since follow, by group package and module name.
ORDER = (
    "Namespace", "Node", "Pod", "Service", "Endpoints", "ConfigMap", "Secret", "Event",
    "ReplicaSet", "Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob",
    "HorizontalPodAutoscaler", "Lease", "PriorityClass", "CustomResourceDefinition",
    "PersistentVolume", "PersistentVolumeClaim", "StorageClass", "PodGroup", "Queue",
    "Job.batch.volcano.sh", "Command", "ServiceAccount", "Role", "ClusterRole", "RoleBinding",
    "ClusterRoleBinding", "SelfSubjectAccessReview", "SubjectAccessReview", "TokenRequest",
    "TokenReview",
)  # fmt: skip


class UnknownKind(LookupError):
    """A name that is no supported kind. `str()` lists the supported kinds."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"unknown kind {name!r}; supported kinds: {', '.join(supported_kinds())}")


def discover(package_name: str = _PACKAGE) -> tuple[KindDef, ...]:
    """The DEFINITION of every module of every group package of a package
    (this one: the built-in kinds), in ORDER, then by group and module name."""
    package = importlib.import_module(package_name)
    found: list[KindDef] = []
    for group in pkgutil.iter_modules(package.__path__):
        if not group.ispkg or group.name.startswith("_") or group.name == "shared":
            continue
        sub = importlib.import_module(f"{package_name}.{group.name}")
        for mod in pkgutil.iter_modules(sub.__path__):
            if mod.ispkg or mod.name.startswith("_"):
                continue
            module = importlib.import_module(f"{sub.__name__}.{mod.name}")
            definition = getattr(module, "DEFINITION", None)
            if isinstance(definition, KindDef):
                found.append(definition)
    keys = [d.key for d in found]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        raise ValueError(f"kinds defined twice: {', '.join(duplicates)}")
    rank = {key: i for i, key in enumerate(ORDER)}
    return tuple(sorted(found, key=lambda d: rank.get(d.key, len(ORDER))))  # stable


class _Table:
    """The current rows and their indexes, swapped whole on every change so a
    reader never sees a half-built index."""

    def __init__(
        self,
        every_builtin: tuple[KindDef, ...],
        added: tuple[KindDef, ...],
        withdrawn: frozenset[str] = frozenset(),
    ) -> None:
        self.every_builtin = every_builtin  # withdrawn groups' kinds too
        self.withdrawn = withdrawn
        builtin = tuple(d for d in every_builtin if d.info.group not in withdrawn)
        self.builtin = builtin
        self.added = added
        self.definitions = (*builtin, *added)
        self.rows = tuple(d.info for d in self.definitions)
        self.by_key: dict[str, KindDef] = {d.key: d for d in self.definitions}
        self.by_name: dict[str, KindDef] = {}
        for d in self.definitions:
            info = d.info
            keys = [info.key, info.kind, info.plural, info.singular, *info.short_names]
            if info.group:
                keys += [f"{info.plural}.{info.group}", f"{info.singular}.{info.group}"]
                keys += [f"{info.kind}.{info.group}"]
            for key in keys:
                self.by_name.setdefault(key.lower(), d)
        # group/version -> the rows served there, in row order: every REST
        # request resolves its URL through it (apiserver/rest/paths.py).
        served: dict[str, list[KindInfo]] = {}
        for d in self.definitions:
            for group_version in d.served_versions():
                served.setdefault(group_version, []).append(d.info)
        self.served_at = {gv: tuple(rows) for gv, rows in served.items()}


_table: _Table | None = None
_lock = threading.Lock()


def _current() -> _Table:
    table = _table
    if table is None:
        table = _load()
    return table


def _load() -> _Table:
    global _table
    with _lock:
        if _table is None:
            _table = _Table(discover(), ())
        return _table


def all_kinds() -> tuple[KindInfo, ...]:
    """The built-in rows followed by those registered at run time."""
    return _current().rows


def served_at(group_version: str) -> tuple[KindInfo, ...]:
    """The rows served at a group/version ("v1", "apps/v1"), in the order of
    all_kinds(); empty for a group/version no kind is served at."""
    return _current().served_at.get(group_version, ())


def definitions() -> tuple[KindDef, ...]:
    """Every kind's definition, in the order of all_kinds()."""
    return _current().definitions


def builtin_definitions() -> tuple[KindDef, ...]:
    return _current().builtin


def builtin_kinds() -> tuple[KindInfo, ...]:
    """The rows of the built-in kinds (those of this package's modules)."""
    return tuple(d.info for d in _current().builtin)


def register(kind: KindInfo | KindDef) -> None:
    """Add (or replace, by key) a kind served from now on (a KindInfo alone:
    a kind with no hooks). A built-in kind cannot be replaced; a kind whose
    Kind name a built-in owns must be `qualified`."""
    global _table
    definition = kind if isinstance(kind, KindDef) else KindDef(kind)
    info = definition.info
    _current()
    with _lock:
        assert _table is not None
        builtin = _table.every_builtin
        owner = next((d.info for d in builtin if d.info.kind == info.kind), None)
        if not info.qualified and owner is not None and info.group != owner.group:
            raise ValueError(
                f"kind {info.kind} of {info.group} must be qualified: "
                f"{info.kind} is a built-in kind"
            )
        if info.key in {d.key for d in builtin}:
            raise ValueError(f"kind {info.key} is built in and cannot be replaced")
        added = (*(d for d in _table.added if d.key != info.key), definition)
        _table = _Table(builtin, added, _table.withdrawn)


def unregister(key: str) -> None:
    """Stop serving a kind added with `register` (no-op for an unknown key)."""
    global _table
    _current()
    with _lock:
        assert _table is not None
        if key in {d.key for d in _table.every_builtin}:
            raise ValueError(f"kind {key} is built in and cannot be removed")
        added = tuple(d for d in _table.added if d.key != key)
        _table = _Table(_table.every_builtin, added, _table.withdrawn)


def withdraw_groups(groups: Collection[str]) -> None:
    """Serve none of the built-in kinds of these API groups from now on (in
    place of any earlier call: an empty collection serves every built-in kind
    again). Kinds registered at run time stay."""
    global _table
    _current()
    with _lock:
        assert _table is not None
        _table = _Table(_table.every_builtin, _table.added, frozenset(groups))


def withdrawn_groups() -> frozenset[str]:
    return _current().withdrawn


def lookup(name: str) -> KindInfo:
    """The kind named by `name`: its key, Kind, plural, singular or short
    name, any case.

    Also accepts `plural.group` ("deployments.apps") and `Kind.group`.
    Raises UnknownKind with the list of supported kinds otherwise.
    """
    return definition_named(name).info


def definition_named(name: str) -> KindDef:
    """The definition of the kind `name` names, as lookup() reads names."""
    found = _current().by_name.get(name.strip().lower())
    if found is None:
        raise UnknownKind(name)
    return found


def definition(key: str) -> KindDef:
    """The definition of a kind by exact key ("Pod", "Job.batch.volcano.sh"),
    else by any name lookup() accepts."""
    found = _current().by_key.get(key)
    if found is None:
        return definition_named(key)
    return found


def find(key: str) -> KindDef | None:
    """The definition of the kind with exactly this key, None when none has it."""
    return _current().by_key.get(key)


def by_kind(kind: str) -> KindInfo:
    """Exact key lookup ("Pod", "Job.batch.volcano.sh"), as API calls carry it."""
    return definition(kind).info


def for_object(api_version: str, kind: str) -> KindInfo:
    """The kind of an object that says `apiVersion: api_version` and `kind: kind`
    (a manifest): the row of that Kind name that serves that apiVersion, else
    the row the Kind name alone names."""
    for info in _current().rows:
        if info.kind == kind and info.accepts_api_version(api_version):
            return info
    return by_kind(kind)


def supported_kinds() -> list[str]:
    return [k.key for k in _current().rows]


# ---- schemas -----------------------------------------------------------------------


_types: tuple[Mapping[str, Type], Mapping[tuple[str, str, str], str]] | None = None


def _schemas() -> tuple[Mapping[str, Type], Mapping[tuple[str, str, str], str]]:
    global _types
    if _types is None:
        # Only the schema's readers need metadata's types (not a name lookup, as skiffctl's).
        from controlplane.api.kinds.shared import meta

        types: dict[str, Type] = dict(meta.TYPES)
        # Every built-in kind's types, a withdrawn group's too: they are data.
        for d in _current().every_builtin:
            for name, t in d.types.items():
                if types.setdefault(name, t) is not t:
                    raise ValueError(f"schema type {name} is declared twice ({d.key})")
        by_kind = {gvk: name for name, t in types.items() for gvk in t.kinds}
        _types = types, by_kind
    return _types


def schema_types() -> Mapping[str, Type]:
    """Every type of every built-in kind's schema, by name (gathered at first
    use). Two kinds may share a type (the same object), never a name."""
    return _schemas()[0]


def kind_types() -> Mapping[tuple[str, str, str], str]:
    """(group, version, Kind) -> schema type name, for every described kind."""
    return _schemas()[1]
