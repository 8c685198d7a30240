"""Node-pressure eviction on real cgroups (issue 20), on skiff's runtime and
on containerd.

The node gets a small allocatable memory (--system-reserved: all but 700Mi
of this machine) and a hard threshold on what its pods may use
(allocatableMemory.available<350Mi): the test never exhausts the machine.
A Guaranteed pod idles; a BestEffort pod fills shell variables, 10 MB
at a time, up to 450 MB (the pods' root is capped at allocatable, 700Mi). The BestEffort pod is evicted (phase Failed, reason Evicted, a
message naming the signal) within 10 s of the pods' working set crossing
the threshold; the Guaranteed pod keeps running; the node reports
MemoryPressure (the node lifecycle controller taints it); the agent and runtime survive.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from agent.eviction.signals import meminfo, memory_hierarchy, working_set
from controlplane.client.apiclient import GrpcApiClient
from tests.e2e.agent.helpers import E2EImages, delete_node_pods, dump, pod, status, wait_running
from tests.harness.controlplane import ControlPlane
from tests.harness.nodeprocs import Node, RuntimeKind, running_node
from tests.harness.registry import Registry
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]

MI = 1 << 20
HOG = (
    "i=0; while [ $i -lt 45 ]; do"
    " eval \"x$i=\\$(head -c 10000000 /dev/zero | tr '\\\\0' a)\"; i=$((i+1)); sleep 0.1;"
    " done; sleep 3600"
)
ALLOCATABLE = 700 * MI
THRESHOLD = 350 * MI


@pytest.fixture
def small_node(
    control_plane: ControlPlane,
    admin: GrpcApiClient,
    registry: Registry,
    e2e_images: E2EImages,
    runtime_kind: RuntimeKind,
) -> Iterator[Node]:
    hier = memory_hierarchy()
    if hier is None:
        pytest.skip("no memory cgroup controller")
    reserved = meminfo()["MemTotal"] - ALLOCATABLE
    args = (
        "--system-reserved", f"memory={reserved}",
        "--eviction-hard", f"allocatableMemory.available<{THRESHOLD >> 20}Mi",
        "--eviction-pressure-transition-period", "30s",
    )  # fmt: skip
    with running_node(
        f"127.0.0.1:{control_plane.port}",
        control_plane.data_dir,
        runtime_kind,
        registry.url,
        agent_args=args,
    ) as n:
        try:
            n.wait_ready(admin)
            yield n
        except BaseException:
            dump(admin, n)
            raise
        finally:
            delete_node_pods(admin, n.spec.name)


def pods_working_set(node: Node) -> int:
    hier = memory_hierarchy()
    assert hier is not None
    return working_set(hier[0] / node.pod_cgroup_root.strip("/"), hier[1]) or 0


def test_besteffort_hog_is_evicted_before_guaranteed(
    small_node: Node, admin: GrpcApiClient, e2e_images: E2EImages
) -> None:
    n = small_node
    node = admin.get("Node", n.spec.name)
    alloc = node["status"]["allocatable"]["memory"]
    assert alloc == f"{ALLOCATABLE >> 10}Ki", alloc
    # kubepods (the pods' root) is capped at allocatable, its cpu shares the
    # allocatable cpu's (--enforce-node-allocatable=pods, the default).
    hier = memory_hierarchy()
    assert hier is not None
    if not hier[1]:
        kubepods = hier[0] / n.pod_cgroup_root.strip("/")
        assert int((kubepods / "memory.limit_in_bytes").read_text()) == ALLOCATABLE
        cpu = hier[0].parent / "cpu" / n.pod_cgroup_root.strip("/")
        cpus = int(node["status"]["allocatable"]["cpu"].rstrip("m")) // 1000
        assert int((cpu / "cpu.shares").read_text()) == cpus * 1024
    guaranteed: dict[str, Any] = {
        "name": "c",
        "image": e2e_images.busybox,
        "command": ["sleep", "3600"],
        "resources": {"limits": {"cpu": "100m", "memory": "32Mi"}},
    }
    admin.create("Pod", pod("guaranteed", n, [guaranteed]), "default")
    wait_running(admin, "guaranteed")
    hog = {
        "name": "c",
        "image": e2e_images.busybox,
        # ~10 MB more every ~0.15 s, each in its own variable (no copy of
        # the whole): a steady climb to 450 MB, never a spike to the cap.
        "command": ["sh", "-c", HOG],
    }
    admin.create("Pod", pod("hog", n, [hog]), "default")

    # Sample the pods' working set until the hog is Failed. The agent often
    # acts within a sample or two of the crossing (the cgroup notification),
    # so the crossing time is the first sample above the threshold or, if
    # none was seen, the last sample of the climb (earlier than the crossing:
    # the measured delay is then an upper bound).
    limit = ALLOCATABLE - THRESHOLD
    seen = {"peak": 0, "t_peak": 0.0, "t_above": 0.0, "next_status": 0.0}

    def sample() -> dict[str, Any]:
        now = time.monotonic()
        ws = pods_working_set(n)
        if ws >= seen["peak"]:
            seen["peak"], seen["t_peak"] = ws, now
        if ws > limit and not seen["t_above"]:
            seen["t_above"] = now
        if now < seen["next_status"]:
            return {}
        seen["next_status"] = now + 0.1
        st = status(admin, "hog")
        return st if st.get("phase") == "Failed" else {}

    st = wait_for(sample, timeout=120, interval=0.02, message="the hog evicted")
    t_failed = time.monotonic()
    t_cross = seen["t_above"] or seen["t_peak"]
    took = t_failed - t_cross
    assert st["reason"] == "Evicted", st
    assert "allocatableMemory.available" in st["message"] and "memory" in st["message"], st
    assert took < 10.0, f"evicted {took:.1f}s after crossing the threshold"
    assert status(admin, "guaranteed")["phase"] == "Running"
    assert n.agent is not None and n.agent.running()
    assert n.runtime is None or n.runtime.running()

    def pressure() -> bool:
        node = admin.get("Node", n.spec.name)
        conds = {c["type"]: c["status"] for c in node["status"]["conditions"]}
        taints = {t["key"] for t in (node.get("spec") or {}).get("taints") or []}
        return (
            conds.get("MemoryPressure") == "True" and "node.kubernetes.io/memory-pressure" in taints
        )

    wait_for(pressure, timeout=30, interval=0.2, message="MemoryPressure and its taint")
    print(f"hog evicted {took:.2f}s after the pods crossed {THRESHOLD >> 20}Mi left")
