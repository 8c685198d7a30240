"""Tokens, the join flow and node authorization."""

from __future__ import annotations

import pytest

from controlplane.client.apiclient import connect, join
from controlplane.client.config import ClientConfig
from controlplane.client.errors import Forbidden, Unauthenticated
from controlplane.client.interface import ListOptions
from tests.fakes.api_objects import pod
from tests.harness.apiserver import Cluster


def test_requests_without_a_valid_token_are_refused(cluster: Cluster) -> None:
    anonymous = connect(ClientConfig(cluster.address, cluster.pki.ca_pem, ""))
    with anonymous, pytest.raises(Unauthenticated):
        anonymous.list("Pod", "default")
    with cluster.client("skiff-admin.0000") as forged, pytest.raises(Unauthenticated):
        forged.get("Namespace", "default")
    with cluster.client() as admin:
        assert admin.whoami()["admin"] is True


def test_join_token_yields_a_node_credential(cluster: Cluster) -> None:
    assert cluster.server.joins is not None
    with pytest.raises(Unauthenticated):
        join(cluster.address, cluster.pki.ca_pem, "skiff-join.wrong", "node-1")
    config = join(cluster.address, cluster.pki.ca_pem,
                  cluster.server.joins.create(), "node-1")  # fmt: skip
    assert config.token.startswith("skiff-node.")
    with connect(config) as node:
        assert node.whoami() == {"user": "system:node:node-1", "node": "node-1", "admin": False}


def test_node_may_write_only_its_own_things(cluster: Cluster) -> None:
    assert cluster.server.authority is not None
    admin = cluster.client()
    node = cluster.client(cluster.server.node_token("node-1"))
    try:
        n = node.create("Node", {"metadata": {"name": "node-1"}})
        n["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
        node.update_status("Node", n)
        with pytest.raises(Forbidden):
            node.create("Node", {"metadata": {"name": "node-2"}})
        node.create("Lease", {"metadata": {"name": "node-1"}, "spec": {"holderIdentity": "node-1"}},
                    "kube-node-lease")  # fmt: skip
        with pytest.raises(Forbidden):
            node.create("Lease", {"metadata": {"name": "node-2"}}, "kube-node-lease")
        with pytest.raises(Forbidden):
            node.create("Pod", pod("sneaky", node="node-1"), "default")
        admin.create("Pod", pod("mine", node="node-1"), "default")
        admin.create("Pod", pod("theirs", node="node-2"), "default")
        node.patch("Pod", "mine", {"status": {"phase": "Running"}}, "default", "status")
        with pytest.raises(Forbidden):
            node.patch("Pod", "theirs", {"status": {"phase": "Running"}}, "default", "status")
        with pytest.raises(Forbidden):
            node.patch("Pod", "mine", {"metadata": {"labels": {"a": "b"}}}, "default")
        with pytest.raises(Forbidden):
            node.create("Deployment", {"metadata": {"name": "d"}}, "default")
        assert node.get("Pod", "mine", "default")  # its own pods only
        with pytest.raises(Forbidden):
            node.get("Pod", "theirs", "default")
        # Every pod, listed or watched, is the NetworkPolicy enforcer's input
        # (ClusterRole system:skiff-network for the group system:nodes).
        assert {p["metadata"]["name"] for p in node.list("Pod", "default").items} >= {
            "mine",
            "theirs",
        }
        mine = node.list("Pod", options=ListOptions(field_selector="spec.nodeName=node-1"))
        assert [p["metadata"]["name"] for p in mine.items] == ["mine"]
    finally:
        node.close()
        admin.close()
