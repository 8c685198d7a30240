"""Hollow nodes (agent/hollow.py) against a real `skiff controlplane` with its
scheduler and controllers: they register Ready, renew their Leases, and the
pods of a Deployment are scheduled onto them and reported Running with an IP
from the node's pod CIDR; deleting the Deployment finishes every pod. No root
needed: nothing touches the machine."""

from __future__ import annotations

import ipaddress
import shutil
from collections.abc import Iterator

import pytest

from agent.hollow import HollowConfig, HollowNodes
from controlplane.client.apiclient import GrpcApiClient
from tests.harness import cluster_workloads as h
from tests.harness.cluster import ClusterControlPlane
from tests.harness.nodeprocs import short_tempdir
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

NODES = 20


@pytest.fixture(scope="module")
def api() -> Iterator[GrpcApiClient]:
    base = short_tempdir("skhollow-")
    cp = ClusterControlPlane(base / "cp", "127.0.0.1")
    try:
        cp.start()
        with cp.client(timeout=30) as c:
            yield c
    finally:
        cp.stop()
        shutil.rmtree(base, ignore_errors=True)


def test_hollow_nodes_run_a_deployment(api: GrpcApiClient) -> None:
    hollow = HollowNodes(api, HollowConfig(nodes=NODES, prefix="hn", lease_period=2.0))
    hollow.start()
    try:
        nodes = api.list("Node").items
        assert len(nodes) == NODES
        for n in nodes:
            assert any(
                c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"]
            )
        renewed = hollow.stats.leases
        wait_for(lambda: hollow.stats.leases >= renewed + NODES, timeout=10, message="heartbeats")
        # Node IPAM (the controller manager, a process of its own by default)
        # gives each node its range; pods started before take a fallback IP.
        wait_for(
            lambda: all(n["spec"].get("podCIDR") for n in api.list("Node").items),
            timeout=60,
            message="every node's podCIDR",
        )

        api.create("Deployment", h.deployment("hd", 60, h.SLEEPER), "default")
        pods = h.wait_ready_pods(api, {"app": "hd"}, 60, timeout=120)
        assert {p["spec"]["nodeName"] for p in pods} <= set(hollow.nodes)
        cidrs = {n["metadata"]["name"]: n["spec"].get("podCIDR") for n in api.list("Node").items}
        for p in pods:  # the fake IP is from the node's range
            cidr = cidrs[p["spec"]["nodeName"]]
            assert ipaddress.ip_address(p["status"]["podIP"]) in ipaddress.ip_network(cidr)
        assert len({p["status"]["podIP"] for p in pods}) == 60

        h.delete(api, "Deployment", "hd")
        h.wait_gone(api, {"app": "hd"}, timeout=60)
        assert hollow.stats.lease_errors == 0
        assert hollow.stats.status_errors == 0
    finally:
        hollow.stop()
