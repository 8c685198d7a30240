"""The CPU cost of one authorization decision, in this process (for bench.apiserver --authz).

The end-to-end figures of `bench.apiserver --authz` compare creates/s and
watch p99 of the admin, an RBAC user and a component; on a shared 2-core
machine their rounds spread by more than the cost they try to show. This
measures the decision itself: the API server's Authorizer with the default
ClusterRoles and bindings loaded into its RBAC index, asked whether a pod
create in namespace "bench" is allowed, for the admin (system:masters), a
user in a group bound to `edit` there, and the controller manager's user.
Rounds are interleaved and the fastest kept (the least disturbed estimate
of the work); microseconds per call.
"""

from __future__ import annotations

import json
import time
from typing import Any

from controlplane.api.kinds import by_kind
from controlplane.apiserver.auth import AUTHENTICATED, MASTERS_GROUP, Identity
from controlplane.apiserver.authz import Authorizer
from controlplane.apiserver.rbaccomponents import CONTROLLER_MANAGER
from controlplane.apiserver.rbacdefaults import (
    cluster_role_bindings,
    cluster_roles,
    fill_aggregated,
)
from controlplane.apiserver.rbacindex import RbacIndex

RBAC = "rbac.authorization.k8s.io"
IDENTITIES = {
    "admin": Identity("admin", admin=True, groups=(MASTERS_GROUP, AUTHENTICATED)),
    "rbac": Identity("bench-user", groups=("bench-users", AUTHENTICATED)),
    "kcm": Identity(CONTROLLER_MANAGER.user, groups=(AUTHENTICATED,)),
}


def _index() -> RbacIndex:
    roles = cluster_roles()
    fill_aggregated(roles)
    binding: dict[str, Any] = {
        "apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
        "metadata": {"name": "bench-users-edit", "namespace": "bench"},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": "bench-users"}],
    }  # fmt: skip
    objects = [("ClusterRole", r) for r in roles]
    objects += [("ClusterRoleBinding", b) for b in cluster_role_bindings()]
    objects.append(("RoleBinding", binding))
    index = RbacIndex()
    index.load((kind, json.dumps(obj).encode()) for kind, obj in objects)
    return index


def authorize_us(calls: int = 20_000, rounds: int = 5) -> dict[str, float]:
    """Microseconds per `authorize` of a pod create, per identity."""
    authorizer = Authorizer(rbac=_index())
    pod = by_kind("Pod")
    new = {"metadata": {"name": "p", "namespace": "bench"}, "spec": {"containers": []}}
    best: dict[str, float] = {}
    for _ in range(rounds):
        for who, identity in IDENTITIES.items():
            authorizer.authorize(identity, "create", pod, "bench", "", new=new)  # warm
            start = time.perf_counter()
            for _ in range(calls):
                authorizer.authorize(identity, "create", pod, "bench", "", new=new)
            per_call = (time.perf_counter() - start) / calls * 1e6
            best[who] = min(best.get(who, per_call), per_call)
    return best
