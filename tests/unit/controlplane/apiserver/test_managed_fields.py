"""managedFields on every write path of the gRPC API, recorded by the
registry: creates, updates, patches, status and scale writes, batched
creates; the manager named by the client's `field-manager` key, else by its
credential (a node is skiff-agent), else by its User-Agent. Unknown fields of
built-in kinds never reach storage."""

from __future__ import annotations

import pytest

from controlplane.apiserver import fieldmanager
from controlplane.apiserver.auth import Identity
from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import ClientConfig
from tests.harness.apiserver import Cluster


def named(cluster: Cluster, manager: str) -> GrpcApiClient:
    assert cluster.server.authority is not None
    token = cluster.server.authority.admin_token()
    config = ClientConfig(cluster.address, cluster.pki.ca_pem, token)
    return connect(config, timeout=10, field_manager=manager)


@pytest.mark.parametrize(
    ("explicit", "agent", "who", "manager"),
    [
        ("mine", "kubectl/v1.32", Identity("system:kube-scheduler"), "mine"),
        ("", "grpc-python/1.6 grpc-c/4", Identity("system:kube-scheduler"), "kube-scheduler"),
        ("", "x/1", Identity("system:kube-controller-manager"), "kube-controller-manager"),
        ("", "x/1", Identity("system:node:n1", node="n1"), "skiff-agent"),
        ("", "my-operator/0.1 (linux)", Identity("alice"), "my-operator"),
        ("", "", Identity("alice"), "unknown"),
    ],
)
def test_the_grpc_manager_name(explicit: str, agent: str, who: Identity, manager: str) -> None:
    assert fieldmanager.for_grpc(explicit, agent, who).name == manager
