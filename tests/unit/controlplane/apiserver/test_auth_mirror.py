"""Node authorization of mirror pods: a node may create and delete the mirror
pods (annotation kubernetes.io/config.mirror) bound to itself, nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.kinds import by_kind
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.authz import Authorizer
from controlplane.client.errors import Forbidden
from tests.fakes.api_objects import mirror, pod

NODE = Identity("system:node:n1", node="n1")
POD = by_kind("Pod")
authorize = Authorizer().authorize


@pytest.mark.parametrize(
    ("obj", "allowed"),
    [
        (mirror("web-n1", "n1"), True),
        (mirror("web-n2", "n2"), False),  # bound to another node
        (mirror("web", ""), False),  # not bound
        (pod("plain", node="n1"), False),  # not a mirror
    ],
)
def test_node_may_create_only_its_own_mirror_pods(obj: dict[str, Any], allowed: bool) -> None:
    if allowed:
        authorize(NODE, "create", POD, "default", obj["metadata"]["name"], None, obj)
    else:
        with pytest.raises(Forbidden):
            authorize(NODE, "create", POD, "default", obj["metadata"]["name"], None, obj)


def test_node_may_delete_its_mirror_but_not_update_it() -> None:
    mine = mirror("web-n1", "n1")
    authorize(NODE, "delete", POD, "default", "web-n1", mine, None)
    with pytest.raises(Forbidden):
        authorize(NODE, "delete", POD, "default", "web-n2", mirror("web-n2", "n2"), None)
    with pytest.raises(Forbidden):
        authorize(NODE, "update", POD, "default", "web-n1", mine, mine)
