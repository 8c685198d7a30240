"""Node authorization of mirror pods: a node may create and delete the mirror
pods (annotation kubernetes.io/config.mirror) bound to itself, nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.client.errors import Forbidden
from controlplane.client.interface import DeleteOptions
from tests.fakes.api_objects import mirror, pod
from tests.harness.apiserver import Cluster


def test_mirror_pod_through_the_server(cluster: Cluster) -> None:
    assert cluster.server.authority is not None
    node = cluster.client(cluster.server.node_token("n1"))
    try:
        uid = node.create("Node", {"metadata": {"name": "n1"}})["metadata"]["uid"]
        created = node.create("Pod", mirror("web-n1", "n1", uid), "default")
        with pytest.raises(Forbidden):
            node.create("Pod", mirror("web-n2", "n2"), "default")
        with pytest.raises(Forbidden):
            node.create("Pod", pod("plain", node="n1"), "default")
        node.delete(
            "Pod",
            "web-n1",
            "default",
            options=DeleteOptions(
                grace_period_seconds=0, precondition_uid=created["metadata"]["uid"]
            ),
        )
    finally:
        node.close()


@pytest.mark.parametrize(
    ("refs", "problem"),
    [
        ([], "with an owner reference set to itself"),
        ([{"apiVersion": "v1", "kind": "Node", "name": "n1", "controller": False}],
         "with a controller owner reference set to itself"),
        ([{"apiVersion": "v1", "kind": "Node", "name": "n1", "controller": True},
          {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "w", "uid": "u"}],
         "with a single owner reference set to itself"),
        ([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "w", "uid": "u",
           "controller": True}], "with an owner reference set to itself"),
        ([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "stale", "controller": True}],
         "does not match the current UID"),
    ],
)  # fmt: skip
def test_a_mirror_pod_must_be_controlled_by_its_node(
    cluster: Cluster, refs: list[dict[str, Any]], problem: str
) -> None:
    """Without its Node as controller a mirror pod is adopted by any
    ReplicaSet whose selector its labels match (issue 32)."""
    with cluster.client(cluster.server.node_token("n1")) as node:
        node.create("Node", {"metadata": {"name": "n1"}})
        body = mirror("m", "n1")
        body["metadata"]["ownerReferences"] = refs
        with pytest.raises(Forbidden, match=problem):
            node.create("Pod", body, "default")
