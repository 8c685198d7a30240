"""The CEL `authorizer` variable answered by this API server's authorizer
(authz.Authorizer: the node authorizer for node credentials, then RBAC;
system:masters may do everything), as kube-apiserver hands its own
authorizer to ValidatingAdmissionPolicy and webhook matchConditions.

`CelAuthorizer(authorizer).variable(identity, request)` is the value of
`authorizer` (with `authorizer.requestResource`) for a request's user;
`CelAuthorizer.check` answers the library's `check(verb)` (bind it with
`controlplane.api.cel.authz.checking`). A refusal is no error: Kubernetes'
"no opinion" (allowed() false, reason empty); an allowed check's reason is
RBAC's (`RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to User
"alice"`; system:masters' is empty, as Kubernetes' privileged-group
authorizer gives none).
"""

from __future__ import annotations

from typing import Any

from controlplane.api import kinds
from controlplane.api.cel import authz
from controlplane.api.rbac import Attributes
from controlplane.apiserver.auth import MASTERS_GROUP, NODES_GROUP, Identity
from controlplane.apiserver.authz import VERBS, Authorizer
from controlplane.client.errors import Forbidden

_REGISTRY_VERBS = {v: k for k, v in VERBS.items()}  # ("update", "status") -> "update_status"


def identity_of(c: authz.Check) -> Identity:
    node = None
    if c.user.startswith("system:node:") and NODES_GROUP in c.groups:
        node = c.user.removeprefix("system:node:") or None
    return Identity(c.user, admin=MASTERS_GROUP in c.groups, node=node, groups=c.groups,
                    uid=c.uid)  # fmt: skip


def _kind(group: str, resource: str) -> kinds.KindInfo | None:
    for info in kinds.all_kinds():
        if info.plural == resource and info.group == group:
            return info
    return None


class CelAuthorizer:
    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer

    def variable(self, who: Identity, resource: dict[str, str] | None) -> dict[str, Any]:
        """`authorizer` for `who`; `resource` (group, resource, subresource,
        namespace, name) makes `authorizer.requestResource`."""
        return authz.authorizer(authz.user_value(who.user, who.groups, who.uid), resource)

    def check(self, c: authz.Check) -> authz.Decision:
        who, a = identity_of(c), c.request
        if who.admin:
            return authz.Decision(True)
        if who.node is not None and a.is_resource:
            info = _kind(a.group, a.resource)
            if info is not None:
                verb = _REGISTRY_VERBS.get((a.verb, a.subresource), a.verb)
                try:
                    self.authorizer.authorize(who, verb, info, a.namespace, a.name,
                                              subresource=a.subresource)  # fmt: skip
                    return authz.Decision(True)
                except Forbidden as refused:
                    return authz.Decision(False, str(refused))
        return self._rbac(who, a)

    def _rbac(self, who: Identity, a: Attributes) -> authz.Decision:
        if not self.authorizer.allows(who, a):
            return authz.Decision(False)
        rbac = self.authorizer.rbac
        return authz.Decision(True, rbac.reason(who, a) if rbac is not None else "")
