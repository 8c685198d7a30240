"""Node authorization of mirror pods: a node may create and delete the mirror
pods (annotation kubernetes.io/config.mirror) bound to itself, nothing else."""

from __future__ import annotations

import pytest

from controlplane.client.errors import Forbidden
from controlplane.client.interface import DeleteOptions
from tests.fakes.api_objects import mirror, pod
from tests.harness.apiserver import Cluster


def test_mirror_pod_through_the_server(cluster: Cluster) -> None:
    assert cluster.server.authority is not None
    node = cluster.client(cluster.server.authority.node_token("n1"))
    try:
        created = node.create("Pod", mirror("web-n1", "n1"), "default")
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
