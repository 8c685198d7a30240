"""Node credentials that die with their node and cannot be minted ahead
(issue 32), through the join path and the gRPC API: on the old code a node
token was an HMAC of the name alone, valid forever, for any name a bootstrap
token holder asked for."""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
from typing import Any

import pytest

from controlplane.client.agents import agent_csr
from controlplane.client.apiclient import connect, join_node
from controlplane.client.config import ClientConfig
from controlplane.client.errors import Unauthenticated
from tests.harness.apiserver import Cluster
from tests.harness.wait import wait_for


def join(cluster: Cluster, node: str) -> ClientConfig:
    assert cluster.server.joins is not None
    token = cluster.server.joins.create(datetime.timedelta(hours=1))
    return join_node(cluster.address, cluster.pki.ca_pem, token, node, agent_csr(node, [])[0])[0]


def works(config: ClientConfig) -> bool:
    try:
        with connect(config, timeout=10) as api:
            api.list("Node")
        return True
    except Unauthenticated:
        return False


def node_object(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"addresses": []}}


def test_a_credential_minted_for_a_future_node_dies_when_that_node_joins(
    cluster: Cluster,
) -> None:
    minted = join(cluster, "future-1")  # a bootstrap token holder, ahead of the real node
    assert works(minted)
    real = join(cluster, "future-1")  # the real node joins: a new credential on record
    assert works(real)
    assert not works(minted)
    with connect(real) as node:
        node.create("Node", node_object("future-1"))


def test_deleting_a_node_stops_its_credential(cluster: Cluster) -> None:
    config = join(cluster, "gone-1")
    with connect(config) as node:
        node.create("Node", node_object("gone-1"))
    assert works(config)
    cluster.client().delete("Node", "gone-1")
    wait_for(lambda: not works(config), timeout=10, message="the credential to stop working")
    # and it cannot bring its Node back
    with pytest.raises(Unauthenticated), connect(config) as node:
        node.create("Node", node_object("gone-1"))
    # a new join (a new bootstrap token, the Node gone) gives the name a new credential
    again = join(cluster, "gone-1")
    with connect(again) as node:
        node.create("Node", node_object("gone-1"))


def test_an_old_name_only_token_no_longer_authenticates(cluster: Cluster) -> None:
    mac = hmac.new(cluster.pki.token_secret, b"node:n9", hashlib.sha256).hexdigest()[:40]
    old = ClientConfig(
        cluster.address,
        cluster.pki.ca_pem,
        f"skiff-node.{base64.urlsafe_b64encode(b'n9').decode().rstrip('=')}.{mac}",
    )
    assert not works(old)
