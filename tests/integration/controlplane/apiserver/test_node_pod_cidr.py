"""A Node's pod subnet is set once, as Kubernetes validates a Node update:
node IPAM (or an admin) gives it to a Node that has none, and no later
write moves it, so two writers racing (a controller and a test harness, two
controller managers) cannot leave two nodes on the same subnet."""

from __future__ import annotations

import pytest

from controlplane.client.errors import Invalid
from tests.harness.apiserver import Cluster

IMMUTABLE = r'spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid'


def test_a_nodes_pod_cidr_is_set_once(cluster: Cluster) -> None:
    admin = cluster.client()
    admin.create("Node", {"metadata": {"name": "n1"}})
    cidr = {"spec": {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"]}}
    node = admin.patch("Node", "n1", cidr)
    assert node["spec"]["podCIDR"] == "10.244.0.0/24"
    # The same value again (a controller retrying its write) is fine.
    admin.patch("Node", "n1", cidr)
    with pytest.raises(Invalid, match=IMMUTABLE):
        admin.patch("Node", "n1", {"spec": {"podCIDR": "10.244.1.0/24",
                                            "podCIDRs": ["10.244.1.0/24"]}})  # fmt: skip
    node = admin.get("Node", "n1")
    node["spec"].pop("podCIDR")
    node["spec"].pop("podCIDRs")
    with pytest.raises(Invalid, match=IMMUTABLE):
        admin.update("Node", node)
    node = admin.get("Node", "n1")
    assert (node["spec"]["podCIDR"], node["spec"]["podCIDRs"]) == (
        "10.244.0.0/24", ["10.244.0.0/24"])  # fmt: skip
    # Other fields still change.
    node = admin.patch("Node", "n1", {"spec": {"unschedulable": True}})
    assert node["spec"]["unschedulable"] is True
    admin.delete("Node", "n1")
