"""Three nodes with pod subnets routed host-gw: join and pod-to-pod traffic."""

from __future__ import annotations

import pytest

from controlplane.client.apiclient import GrpcApiClient
from tests.e2e.cluster.network import check_nodes_joined, check_pod_to_pod
from tests.harness.cluster import Cluster

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.netns, pytest.mark.slow]

BACKEND = "host-gw"


def test_nodes_join_over_tls(cluster: Cluster, api: GrpcApiClient) -> None:
    check_nodes_joined(cluster, api)
    for n in cluster.nodes:
        routes = n.sh("ip", "-4", "route").stdout
        for other in cluster.nodes:
            if other is not n:
                assert f"via {other.ip}" in routes, f"{n.name} has no route via {other.name}"


def test_pod_to_pod_across_nodes_host_gw(cluster: Cluster, api: GrpcApiClient) -> None:
    check_pod_to_pod(cluster, api, "gw")
