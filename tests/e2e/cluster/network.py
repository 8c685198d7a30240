"""Pod-to-pod traffic across nodes, shared by the host-gw and VXLAN modules."""

from __future__ import annotations

import functools

from controlplane.client.apiclient import GrpcApiClient
from tests.harness import cluster_workloads as h
from tests.harness.cluster import Cluster
from tests.harness.wait import wait_for


def check_nodes_joined(cluster: Cluster, api: GrpcApiClient) -> None:
    """Every node registered over TLS with the join token and is Ready, with
    its own address and a distinct pod CIDR."""
    nodes = {n["metadata"]["name"]: n for n in api.list("Node").items}
    assert set(nodes) >= {n.name for n in cluster.nodes}
    cidrs = set()
    for n in cluster.nodes:
        obj = nodes[n.name]
        conds = {c["type"]: c["status"] for c in obj["status"]["conditions"]}
        assert conds["Ready"] == "True"
        addrs = {a["address"] for a in obj["status"].get("addresses") or []}
        assert n.ip in addrs
        cidrs.add(obj["spec"]["podCIDR"])
    assert len(cidrs) == len(cluster.nodes)


def check_pod_to_pod(cluster: Cluster, api: GrpcApiClient, prefix: str) -> None:
    """A web pod on every node, bound by spec.nodeName; each answers every
    other node's pods with its own name."""
    names = [f"{prefix}-{n.name}" for n in cluster.nodes]
    try:
        for name, n in zip(names, cluster.nodes, strict=True):
            api.create("Pod", h.pod(name, h.WHOAMI, node=n.name), "default")
        pods = [h.wait_pod_running(api, name) for name in names]
        for src in pods:
            for dst in pods:
                url = f"http://{dst['status']['podIP']}/"
                got = wait_for(
                    functools.partial(h.fetch, cluster, src, url),
                    timeout=20,
                    interval=0.3,
                    message=f"{src['metadata']['name']} -> {url}",
                )
                assert got == dst["metadata"]["name"]
    finally:
        for name in names:
            h.delete(api, "Pod", name)
