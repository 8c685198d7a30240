"""Issue 31 across three nodes (host-gw): an Ingress without a class served by
every node's HAProxy, a LoadBalancer Service on every node's address, and
NetworkPolicies enforced pod to pod across nodes through agent restarts
(tests/e2e/netcheck.py has the checks). Each node is a network namespace,
so every agent's ingress keeps Kubernetes' ports 80 and 443 without
colliding with another's or with the host's."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.client.apiclient import GrpcApiClient
from tests.e2e import netcheck, netpolcheck
from tests.e2e.cluster.conftest import BUSYBOX
from tests.harness.cluster import Cluster

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.netns, pytest.mark.slow]

BACKEND = "host-gw"


@pytest.fixture
def scene(cluster: Cluster, api: GrpcApiClient) -> Iterator[netcheck.Scene]:
    def exec_in(pod: dict[str, Any], argv: list[str]) -> int:
        c = cluster.node(pod["spec"]["nodeName"]).cri()
        try:
            labels = {"io.kubernetes.pod.name": pod["metadata"]["name"],
                      "io.kubernetes.pod.namespace": pod["metadata"]["namespace"]}  # fmt: skip
            running = [x for x in c.list_containers(labels) if x.state == 1]
            assert running, f"no running container of {pod['metadata']['name']}"
            return int(c.exec_sync(running[0].id, argv, 10).exit_code)
        finally:
            c.close()

    def restart_agent(name: str) -> None:
        node = cluster.node(name)
        assert node.agent is not None
        node.agent.stop(signal.SIGKILL)
        node.start_agent()
        node.wait_ready(api)

    s = netcheck.Scene(
        api=api,
        image=BUSYBOX,
        nodes=[n.name for n in cluster.nodes],
        exec_in=exec_in,
        log_root=lambda name: cluster.node(name).base / "pods",
        restart_agent=restart_agent,
        cri_of=lambda name: cluster.node(name).cri(),
    )
    try:
        yield s
    finally:
        s.cleanup()


def test_ingress_without_class_and_a_load_balancer_service(scene: netcheck.Scene) -> None:
    netcheck.check_ingress_and_load_balancer(scene, 80, 443, 8080)


def test_network_policies_across_nodes_through_agent_restarts(scene: netcheck.Scene) -> None:
    netcheck.check_network_policies(scene)


def test_network_policy_variants_with_live_traffic(scene: netcheck.Scene) -> None:
    netpolcheck.check_policy_variants(scene)


def test_local_service_keeps_the_client_address(scene: netcheck.Scene) -> None:
    netpolcheck.check_local_keeps_source(scene, 8090, client_outside=True)


def test_network_policy_sctp_with_live_traffic(scene: netcheck.Scene) -> None:
    if not netpolcheck.sctp_supported():
        pytest.skip(
            "this kernel has no SCTP (no sctp module): SCTP rules are checked in unit tests"
        )
    netpolcheck.check_sctp_policy(scene)
