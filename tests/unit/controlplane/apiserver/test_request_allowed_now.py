"""The REST front door's authorization without a trip to the executor:
`request_allowed_now` says yes only where `authorize_request` passes at once
(system:masters, a role binding as the RBAC index stands, a node's request,
which is authorized later with its object); for anyone else it says no, and
`authorize_request` (which waits for the indexes before refusing) decides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controlplane.api.kinds import by_kind
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.authz import Authorizer
from controlplane.apiserver.rbacindex import RbacIndex
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import Forbidden
from controlplane.storage.sqlite import SqliteStore

ADMIN = Identity("admin", admin=True)
NODE = Identity("system:node:n1", node="n1", groups=("system:nodes",))
ALICE = Identity("alice", groups=("dev",))
BOB = Identity("bob")


def test_allowed_now_only_where_authorize_request_passes(tmp_path: Path) -> None:
    rbac = RbacIndex()
    role = {"metadata": {"name": "pods", "namespace": "a"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}]}  # fmt: skip
    binding = {"metadata": {"name": "dev", "namespace": "a"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pods"},
               "subjects": [{"kind": "Group", "name": "dev"}]}  # fmt: skip
    rbac.load([("Role", json.dumps(role).encode()), ("RoleBinding", json.dumps(binding).encode())])
    store = SqliteStore(tmp_path / "state.db")
    try:
        registry = Registry(store, authorizer=Authorizer(rbac=rbac))
        pod = by_kind("Pod")
        for who, verb, ns, now in ((ADMIN, "create", "a", True), (NODE, "create", "a", True),
                                   (ALICE, "create", "a", True), (ALICE, "create", "b", False),
                                   (ALICE, "delete", "a", False), (BOB, "create", "a", False)):  # fmt: skip
            found = registry.request_allowed_now(who, verb, pod, ns, "p")
            assert found is now, (who.user, verb, ns)
            if now:
                registry.authorize_request(who, verb, pod, ns, "p")  # passes too
            else:
                with pytest.raises(Forbidden):
                    registry.authorize_request(who, verb, pod, ns, "p")
    finally:
        store.close()
