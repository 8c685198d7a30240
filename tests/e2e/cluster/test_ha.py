"""Two control planes on one etcd (Debian's etcd-server) with leader failover.

The first control plane starts alone and takes the scheduler's and the
controller manager's Leases; the second joins the same etcd (same PKI, as
kubeadm's second control-plane node gets its certificates) and serves the
same objects. The first is then killed with SIGKILL, so it never releases its
Leases: the second must take both over once they expire, and a Deployment
created through it gets its pods created and scheduled.
"""

from __future__ import annotations

import shutil
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.client.apiclient import GrpcApiClient
from machinery import rfc3339
from tests.e2e.cluster import helpers as h
from tests.harness.cluster import Cluster, ClusterControlPlane, running_cluster
from tests.harness.registry import Registry
from tests.harness.wait import wait_for
from tests.unit.controlplane.storage.etcd_server import etcd_available, running_etcd

pytestmark = [
    pytest.mark.root,
    pytest.mark.e2e,
    pytest.mark.netns,
    pytest.mark.slow,
    pytest.mark.skipif(not etcd_available(), reason="etcd (Debian etcd-server) is not installed"),
]

LEASES = ("skiff-scheduler", "skiff-controller-manager")


@pytest.fixture(scope="module")
def ha(registry: Registry) -> Iterator[tuple[Cluster, ClusterControlPlane]]:
    with running_etcd() as etcd:
        store = ["--store", "etcd", "--etcd-endpoints", etcd.endpoint, "--etcd-prefix", "/ha"]
        with running_cluster(registry.host, nodes=0, cp_args=store) as cl:
            with cl.client() as api:
                wait_for(lambda: holders(api), timeout=30, message="first control plane leads")
            second = ClusterControlPlane(cl.base / "cp2", cl.host_ip, store)
            cl.extra_cps.append(second)
            (second.data_dir / "pki").mkdir(parents=True)
            for f in (cl.cp.data_dir / "pki").iterdir():
                shutil.copy(f, second.data_dir / "pki" / f.name)
            try:
                second.start()
                yield cl, second
            finally:
                second.stop()


def holders(api: GrpcApiClient) -> dict[str, str]:
    out = {}
    for name in LEASES:
        spec = api.get("Lease", name, "kube-system").get("spec") or {}
        if not spec.get("holderIdentity"):
            return {}
        out[name] = str(spec["holderIdentity"])
    return out


def fake_node(name: str) -> dict[str, Any]:
    """A Ready Node object (no agent) for the scheduler to bind to."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def test_two_control_planes_one_etcd_leader_failover(
    ha: tuple[Cluster, ClusterControlPlane],
) -> None:
    cl, second = ha
    with second.client() as api2, cl.client() as api1:
        # Both serve the same store.
        api1.create("ConfigMap", {"metadata": {"name": "shared"}, "data": {"a": "1"}}, "default")
        assert api2.get("ConfigMap", "shared", "default")["data"] == {"a": "1"}
        before = holders(api2)
        assert before
        api2.create("Node", fake_node("ha-node"))
        api2.patch(
            "Node", "ha-node", {"status": fake_node("ha-node")["status"]}, subresource="status"
        )
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "ha-node", "namespace": "kube-node-lease"},
            "spec": {
                "holderIdentity": "ha-node",
                "leaseDurationSeconds": 40,
                "renewTime": rfc3339.now(micro=True),
            },
        }
        api2.create("Lease", lease, "kube-node-lease")  # fresh for the node's grace period

        started = time.monotonic()
        cl.cp.stop(signal.SIGKILL)

        def taken_over() -> dict[str, str]:
            now = holders(api2)
            return now if all(now[k] != before[k] for k in LEASES) else {}

        wait_for(taken_over, timeout=60, interval=0.5, message="second control plane leads")
        took = time.monotonic() - started
        api2.create("Deployment", h.deployment("after", 2, h.SLEEPER), "default")

        def scheduled() -> list[dict[str, Any]]:
            got = h.pods(api2, {"app": "after"})
            ok = len(got) == 2 and all(p["spec"].get("nodeName") == "ha-node" for p in got)
            return got if ok else []

        wait_for(scheduled, timeout=30, interval=0.3, message="pods created and bound")
        sys.stderr.write(f"leases taken over {took:.1f}s after the leader was killed\n")
        assert took < 15 + 15  # lease duration plus retries
