"""Authorization: may this identity do this verb on this object?

One `Authorizer` per API server, held by the registry, which asks it on
every read and write (both front doors go through the registry, so neither
decides anything itself). In Kubernetes' order:

1. the admin (group system:masters) may do everything;
2. a node credential gets the node authorizer and NodeRestriction
   (`noderestriction.py`, fed by the `NodeGraph`); what it refuses may
   still be granted by RBAC, and its reason is the one reported;
3. RBAC (`rbacindex.py`, fed by the API server's own watch) for everyone:
   users, ServiceAccounts, components.

Writes are asked twice: before the new object is built (`new` is None:
may this identity touch that object at all?) and once it is (`new` set:
may it make that change?). Creating or changing a Role, ClusterRole or a
binding also checks escalation: the writer must hold every permission it
grants, or the `escalate` (roles) / `bind` (bindings) verb.

Refusals say who, what and why, and change nothing. This module never
reads storage itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controlplane.api.kinds import KindInfo
from controlplane.api.rbac import GROUP, Attributes, PolicyRule, covers, parse_rules
from controlplane.api.selectors import FieldSelector, LabelSelector
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.nodegraph import NodeGraph
from controlplane.apiserver.noderestriction import AddressCheck, Lookup, refusal
from controlplane.apiserver.progress import IndexProgress
from controlplane.apiserver.rbacindex import RbacIndex
from controlplane.client.errors import Forbidden

CATCH_UP = 0.5  # seconds a refusal waits at most for the indexes to catch up

# The registry's verbs as Kubernetes' (verb, subresource).
VERBS: dict[str, tuple[str, str]] = {
    "update_status": ("update", "status"),
    "patch_status": ("patch", "status"),
    "update_ephemeralcontainers": ("update", "ephemeralcontainers"),
    "patch_ephemeralcontainers": ("patch", "ephemeralcontainers"),
    "update_resize": ("update", "resize"),
    "patch_resize": ("patch", "resize"),
    "update_approval": ("update", "approval"),
    "patch_approval": ("patch", "approval"),
    "bind": ("create", "binding"),
    "get_scale": ("get", "scale"),
}
RBAC_KINDS = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})
EVERYTHING = PolicyRule(frozenset("*"), frozenset("*"), frozenset("*"))


def attributes(
    verb: str, info: KindInfo, namespace: str, name: str, subresource: str = ""
) -> Attributes:
    """The RBAC request attributes of a registry call."""
    k8s_verb, sub = VERBS.get(verb, (verb, subresource))
    if k8s_verb == "create" and not sub:
        name = ""  # as in Kubernetes, a create is not restricted by resourceNames
    return Attributes(k8s_verb, info.group, info.plural, sub, namespace, name)


def describe(identity: Identity, a: Attributes) -> str:
    """Kubernetes' Forbidden message: `secrets "s" is forbidden: User "alice"
    cannot get resource "secrets" in API group "" in the namespace "b"`."""
    if not a.is_resource:
        return f'forbidden: User "{identity.user}" cannot {a.verb} path "{a.path}"'
    resource = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    qualified = f"{a.resource}.{a.group}" if a.group else a.resource
    what = f'{qualified} "{a.name}"' if a.name else qualified
    where = f'in the namespace "{a.namespace}"' if a.namespace else "at the cluster scope"
    return (f'{what} is forbidden: User "{identity.user}" cannot {a.verb} resource '
            f'"{resource}" in API group "{a.group}" {where}')  # fmt: skip


@dataclass(eq=False)
class Authorizer:
    """See the module docstring. `revision` is the store's current revision
    and `progress` how far the indexes have followed it: before refusing, wait
    (briefly) for them to catch up, so a request right after a write is
    answered as of that write."""

    graph: NodeGraph | None = None
    lookup: Lookup | None = None
    revision: Callable[[], int] | None = None
    rbac: RbacIndex | None = None
    progress: IndexProgress | None = None
    # (node, ip) -> why the node may not claim it (node_addresses.py); set by the server.
    address_problem: AddressCheck | None = field(default=None, init=False)

    def _caught_up(self) -> bool:
        """Whether the indexes moved on (after waiting for them); False when
        there is nothing to wait for."""
        if self.progress is None or self.revision is None:
            return False
        return self.progress.catch_up(self.revision(), CATCH_UP)

    def allowed(self, identity: Identity, a: Attributes) -> bool:
        """Whether RBAC (or system:masters) allows the request, as the index
        stands now."""
        if identity.admin:
            return True
        return self.rbac is not None and self.rbac.rules_for(identity).allows(a)

    def allows(self, identity: Identity, a: Attributes) -> bool:
        """`allowed`, asked again once the indexes caught up before saying no."""
        return self.allowed(identity, a) or (self._caught_up() and self.allowed(identity, a))

    def rules_of(self, identity: Identity, namespace: str) -> list[PolicyRule]:
        """Every rule `identity` holds in `namespace` (cluster-wide ones
        included): what a SelfSubjectRulesReview lists."""
        owned = self._owned(identity, namespace)
        if identity.admin:  # system:masters: everything, before what its bindings grant
            everything = [EVERYTHING, PolicyRule(frozenset("*"), non_resource_urls=frozenset("*"))]
            return [*everything, *(r for r in owned if r not in everything)]
        return owned

    def authorize(
        self,
        identity: Identity,
        verb: str,
        info: KindInfo,
        namespace: str,
        name: str,
        old: dict[str, Any] | None = None,
        new: dict[str, Any] | None = None,
        fields: FieldSelector | None = None,
        subresource: str = "",
        labels: LabelSelector | None = None,
    ) -> None:
        """Raise Forbidden unless `identity` may do `verb` on the object
        (a list or watch with its field and label selectors)."""
        if identity.admin:
            return
        node_reason = None
        if identity.node is not None:
            node_reason = self._node(
                identity.node, verb, info, namespace, name, old, new, fields, labels
            )
            if node_reason is None:
                return
        a = attributes(verb, info, namespace, name, subresource)
        if not self.allows(identity, a):
            raise Forbidden(node_reason or describe(identity, a))
        if info.kind in RBAC_KINDS and new is not None and a.verb in ("create", "update", "patch"):
            self._no_escalation(identity, info, namespace, name, new)

    def authorize_path(self, identity: Identity, verb: str, path: str) -> None:
        """A non-resource request (`/healthz`, `/version`, `/apis`)."""
        a = Attributes(verb, path=path)
        if not self.allows(identity, a):
            raise Forbidden(describe(identity, a))

    def _node(
        self,
        node: str,
        verb: str,
        info: KindInfo,
        namespace: str,
        name: str,
        old: dict[str, Any] | None,
        new: dict[str, Any] | None,
        fields: FieldSelector | None,
        labels: LabelSelector | None = None,
    ) -> str | None:
        args = (node, verb, info, namespace, name, old, new, fields, self.lookup,
                self.address_problem, labels)  # fmt: skip
        reason = refusal(self.graph, *args)
        if reason is not None and self._caught_up():
            reason = refusal(self.graph, *args)
        return reason

    def _owned(self, identity: Identity, namespace: str) -> list[PolicyRule]:
        if self.rbac is None:
            return []
        return self.rbac.rules_for(identity).rules_in(namespace)

    def _no_escalation(
        self, identity: Identity, info: KindInfo, namespace: str, name: str, new: dict[str, Any]
    ) -> None:
        """Refuse a role or binding that grants what its writer does not hold."""
        owned = self._owned(identity, namespace)
        if info.kind in ("Role", "ClusterRole"):
            if self.allowed(identity, Attributes("escalate", GROUP, info.plural, "", namespace,
                                                 name)):  # fmt: skip
                return
            requested = list(parse_rules(new.get("rules")))
            if new.get("aggregationRule"):
                requested.append(EVERYTHING)  # aggregating may pull in anything
            missing = covers(owned, requested)
            if missing:
                shown = "; ".join(str(r.to_dict()) for r in missing[:3])
                raise Forbidden(
                    f'user "{identity.user}" may not grant permissions it does not hold '
                    f"(escalation): {shown}; it needs them, or the escalate verb on {info.plural}"
                )
            return
        ref = new.get("roleRef") or {}
        kind, role = str(ref.get("kind") or ""), str(ref.get("name") or "")
        plural = "roles" if kind == "Role" else "clusterroles"
        if self.allowed(identity, Attributes("bind", GROUP, plural, "", namespace, role)):
            return
        rules = self.rbac.role_rules(kind, namespace, role) if self.rbac is not None else None
        if rules is None:
            raise Forbidden(
                f'user "{identity.user}" may not bind {kind} "{role}": it does not exist '
                f"(binding a missing role needs the bind verb on {plural})"
            )
        missing = covers(owned, rules)
        if missing:
            shown = "; ".join(str(r.to_dict()) for r in missing[:3])
            raise Forbidden(
                f'user "{identity.user}" may not bind {kind} "{role}": it grants permissions '
                f"the user does not hold ({shown}); it needs them, or the bind verb on {plural}"
            )
