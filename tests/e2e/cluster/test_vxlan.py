"""Three nodes with pod subnets carried over VXLAN: join and pod-to-pod traffic."""

from __future__ import annotations

import pytest

from controlplane.client.apiclient import GrpcApiClient
from tests.e2e.cluster.network import check_nodes_joined, check_pod_to_pod
from tests.harness.cluster import Cluster, ClusterNode
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.netns, pytest.mark.slow]

BACKEND = "vxlan"


def test_nodes_join_over_tls(cluster: Cluster, api: GrpcApiClient) -> None:
    check_nodes_joined(cluster, api)
    for n in cluster.nodes:
        # The device comes with the first peer: once the other nodes have
        # their pod CIDRs, the agent rewrites its CNI config and reconciles.
        def has_vxlan(node: ClusterNode = n) -> bool:
            return bool(node.sh("ip", "-o", "link", "show", "type", "vxlan").stdout.strip())

        wait_for(has_vxlan, timeout=30, message=f"{n.name} to have a VXLAN device")


def test_pod_to_pod_across_nodes_vxlan(cluster: Cluster, api: GrpcApiClient) -> None:
    check_pod_to_pod(cluster, api, "vx")
