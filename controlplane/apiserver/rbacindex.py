"""The RBAC objects in memory, fed by the API server's own watch.

Roles, ClusterRoles, RoleBindings and ClusterRoleBindings are loaded once
from a List and kept current by the broadcaster's listener, so authorizing
a request never reads storage. `rules_for(identity)` gathers the rules
every binding naming the identity (its user, a group, its ServiceAccount)
grants, cluster-wide and per namespace, cached per (user, groups) until an
RBAC object changes. A binding to a role that does not exist grants nothing.

This module decides nothing: authz.Authorizer asks it and decides.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from controlplane.api import jsoncodec
from controlplane.api.rbac import Attributes, PolicyRule, allows, parse_rules
from controlplane.apiserver.auth import Identity
from controlplane.storage.interface import Event, EventType

PREFIXES = {
    "/registry/roles/": "Role",
    "/registry/clusterroles/": "ClusterRole",
    "/registry/rolebindings/": "RoleBinding",
    "/registry/clusterrolebindings/": "ClusterRoleBinding",
}
SA_PREFIX = "system:serviceaccount:"
CACHED = 4096  # identities whose rules are remembered
DECISIONS = 1024  # decisions remembered per identity


@dataclass(frozen=True)
class RuleSet:
    """What one identity may do: cluster-wide rules, and rules per namespace."""

    cluster: tuple[PolicyRule, ...] = ()
    by_namespace: dict[str, tuple[PolicyRule, ...]] = field(default_factory=dict)
    # Decisions already made (the same few requests repeat): a dict lookup
    # instead of a rule scan. Dropped with the RuleSet when RBAC changes.
    _decided: dict[Attributes, bool] = field(default_factory=dict, compare=False)

    def allows(self, a: Attributes) -> bool:
        decided = self._decided.get(a)
        if decided is not None:
            return decided
        decided = allows(self.cluster, a) or (
            bool(a.namespace) and allows(self.by_namespace.get(a.namespace, ()), a)
        )
        if len(self._decided) >= DECISIONS:
            self._decided.clear()
        self._decided[a] = decided
        return decided

    def rules_in(self, namespace: str) -> list[PolicyRule]:
        """The rules that apply in `namespace` ("" : cluster-wide only)."""
        return [*self.cluster, *(self.by_namespace.get(namespace, ()) if namespace else ())]


@dataclass(frozen=True)
class _Binding:
    namespace: str  # "" for a ClusterRoleBinding
    role_kind: str
    role_name: str
    subjects: tuple[tuple[str, str, str], ...]  # (kind, name, namespace)


def _subjects(obj: dict[str, Any], namespace: str) -> tuple[tuple[str, str, str], ...]:
    out = []
    for s in obj.get("subjects") or []:
        if isinstance(s, dict):
            ns = str(s.get("namespace") or (namespace if s.get("kind") == "ServiceAccount" else ""))
            out.append((str(s.get("kind") or ""), str(s.get("name") or ""), ns))
    return tuple(out)


def names(identity: Identity, subject: tuple[str, str, str]) -> bool:
    """Whether a binding's subject names `identity`."""
    kind, name, namespace = subject
    if kind == "User":
        return name == identity.user
    if kind == "Group":
        return name in identity.groups
    if kind == "ServiceAccount":
        return identity.user == f"{SA_PREFIX}{namespace}:{name}"
    return False


class RbacIndex:
    """See the module docstring. Thread-safe."""

    prefixes = tuple(PREFIXES)  # the keys of the events on_event reads

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._roles: dict[tuple[str, str], tuple[PolicyRule, ...]] = {}  # (ns, name); "" = cluster
        self._bindings: dict[tuple[str, str, str], _Binding] = {}  # (kind, ns, name)
        self._generation = 0
        self._cache: dict[tuple[str, tuple[str, ...]], tuple[int, RuleSet]] = {}

    # -- feeding -----------------------------------------------------------------

    def load(self, objects: Iterable[tuple[str, bytes]]) -> None:
        """(kind, stored JSON) of every RBAC object, from a List."""
        for kind, data in objects:
            self._put(kind, jsoncodec.loads(data))

    def on_event(self, event: Event) -> None:
        """Broadcaster listener: cheap, never blocks."""
        key = event.key
        for prefix, kind in PREFIXES.items():
            if key.startswith(prefix):
                rest = key[len(prefix) :]
                ns, _, name = rest.rpartition("/")
                if event.type is EventType.DELETE:
                    self._drop(kind, ns, name)
                else:
                    self._put(kind, jsoncodec.loads(event.value))
                return

    def _put(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        with self._lock:
            if kind in ("Role", "ClusterRole"):
                self._roles[(ns if kind == "Role" else "", name)] = parse_rules(obj.get("rules"))
            else:
                ref = obj.get("roleRef") or {}
                self._bindings[(kind, ns, name)] = _Binding(
                    ns, str(ref.get("kind") or ""), str(ref.get("name") or ""), _subjects(obj, ns)
                )
            self._changed()

    def _drop(self, kind: str, ns: str, name: str) -> None:
        with self._lock:
            if kind in ("Role", "ClusterRole"):
                self._roles.pop((ns if kind == "Role" else "", name), None)
            else:
                self._bindings.pop((kind, ns, name), None)
            self._changed()

    def _changed(self) -> None:
        self._generation += 1
        self._cache.clear()

    # -- questions ---------------------------------------------------------------

    def role_rules(self, kind: str, namespace: str, name: str) -> tuple[PolicyRule, ...] | None:
        """The rules of a Role (in namespace) or ClusterRole; None if it does not exist."""
        with self._lock:
            return self._roles.get((namespace if kind == "Role" else "", name))

    def rules_for(self, identity: Identity) -> RuleSet:
        key = (identity.user, identity.groups)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit[0] == self._generation:
                return hit[1]
            cluster: list[PolicyRule] = []
            by_ns: dict[str, list[PolicyRule]] = {}
            for binding in self._bindings.values():
                if not any(names(identity, s) for s in binding.subjects):
                    continue
                role_ns = binding.namespace if binding.role_kind == "Role" else ""
                rules = self._roles.get((role_ns, binding.role_name), ())
                if binding.namespace:
                    by_ns.setdefault(binding.namespace, []).extend(rules)
                else:
                    cluster.extend(rules)
            found = RuleSet(tuple(cluster), {ns: tuple(r) for ns, r in by_ns.items()})
            if len(self._cache) >= CACHED:
                self._cache.clear()
            self._cache[key] = (self._generation, found)
            return found

    def reason(self, identity: Identity, a: Attributes) -> str:
        """Kubernetes' RBAC reason for an allowed request (`RBAC: allowed by
        ClusterRoleBinding "b" of ClusterRole "r" to User "alice"`), from the
        first binding whose role allows it (ClusterRoleBindings first, then
        the namespace's RoleBindings, each by name); "" when none does."""
        with self._lock:
            bindings = sorted(self._bindings.items(), key=lambda kv: (kv[0][0] != "ClusterRoleBinding",
                                                                     kv[0][2]))  # fmt: skip
            for (kind, ns, name), binding in bindings:
                if kind == "RoleBinding" and ns != a.namespace:
                    continue
                subject = next((s for s in binding.subjects if names(identity, s)), None)
                if subject is None:
                    continue
                role_ns = binding.namespace if binding.role_kind == "Role" else ""
                if not allows(self._roles.get((role_ns, binding.role_name), ()), a):
                    continue
                s_kind, s_name, s_ns = subject
                who = f'{s_kind} "{s_name}/{s_ns}"' if s_kind == "ServiceAccount" else (
                    f'{s_kind} "{s_name}"')  # fmt: skip
                where = f"{name}/{ns}" if kind == "RoleBinding" else name
                return (f'RBAC: allowed by {kind} "{where}" of {binding.role_kind} '
                        f'"{binding.role_name}" to {who}')  # fmt: skip
        return ""
