"""A node may not point the API server at any host:port (issue 32): the
addresses and agent port in its Node status are its own or refused."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.client.agents import certificate_mismatch
from controlplane.client.errors import Forbidden
from tests.harness.apiserver import Cluster
from tests.integration.controlplane.apiserver.test_node_authorizer import node_client


def status(*addresses: tuple[str, str], port: Any = 10250) -> dict[str, Any]:
    return {"addresses": [{"type": t, "address": a} for t, a in addresses],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}  # fmt: skip


@pytest.mark.parametrize(
    ("claimed", "port", "problem"),
    [
        (("InternalIP", "10.43.0.10"), 10250, "is in the Service range"),
        (("InternalIP", "169.254.169.254"), 80, "not the address of one host"),
        (("InternalIP", "10.1.1.1"), 10250, 'is an address of node "other"'),
        (("ExternalIP", "10.244.9.3"), 10250, 'is in the pod range of node "other"'),
        (("InternalIP", "10.0.0.5:2379"), 10250, "is not an IP address"),
        (("Hostname", "evil.example.com:80"), 10250, "is not a DNS name"),
        (("InternalIP", "10.0.0.5"), 70000, "must be a port number"),
        (("InternalIP", "10.0.0.5"), "2379", "must be a port number"),
    ],
)
def test_a_node_may_not_claim_an_address_that_is_not_its_own(
    cluster: Cluster, claimed: tuple[str, str], port: Any, problem: str
) -> None:
    admin = cluster.client()
    admin.create("Node", {"metadata": {"name": "other"}, "spec": {"podCIDR": "10.244.9.0/24"},
                          "status": status(("InternalIP", "10.1.1.1"))})  # fmt: skip
    with node_client(cluster, "n1") as n1:
        with pytest.raises(Forbidden, match=problem):
            n1.create("Node", {"metadata": {"name": "n1"}, "status": status(claimed, port=port)})
        node = n1.create("Node", {"metadata": {"name": "n1"},
                                  "status": status(("InternalIP", "10.0.0.5"))})  # fmt: skip
        node["status"] = status(claimed, port=port)
        with pytest.raises(Forbidden, match=problem):
            n1.update_status("Node", node)
        node["status"] = status(("InternalIP", "127.0.0.1"), ("Hostname", "n1"), port=10250)
        n1.update_status("Node", node)  # loopback: a node on the control plane's own host


def test_the_api_server_checks_the_agents_certificate_against_the_address() -> None:
    peer = {"subjectAltName": (("DNS", "n1"), ("IP Address", "10.0.0.5"))}
    assert certificate_mismatch(peer, "10.0.0.5") is None
    assert certificate_mismatch(peer, "127.0.0.1") is None  # never in a certificate
    assert certificate_mismatch(peer, "n1") is None  # the name was checked by the handshake
    assert certificate_mismatch(peer, "10.0.0.6") == (
        "its certificate is not valid for 10.0.0.6, the address its Node names"
    )


def test_several_nodes_on_one_host_share_its_loopback_address(cluster: Cluster) -> None:
    """Agents beside the control plane (a test harness, a developer's host)
    all report 127.0.0.1; a second one must still register."""
    for name in ("lo1", "lo2"):
        with node_client(cluster, name) as client:
            client.create("Node", {"metadata": {"name": name},
                                   "status": status(("InternalIP", "127.0.0.1"))})  # fmt: skip
    assert cluster.client().get("Node", "lo2")["status"]["addresses"][0]["address"] == "127.0.0.1"
