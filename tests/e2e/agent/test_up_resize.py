"""In-place pod resize on `skiff up` (issue 33; beta in Kubernetes 1.33).

`kubectl patch --subresource resize` changes a running container's cpu
limit in its cgroup without a restart, and its status reports the new
resources; a resize bigger than the node is `PodResizePending` with reason
Infeasible and the kubelet's message, while the pod runs on unchanged.
`hostUsers: false` is refused with the kubelet's reason (the runtime has no
user namespaces).
Before, the API had no pods/resize and the agent never changed a running
container's resources.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agent.kubelet_up import Cluster, busybox_pod, container, skiff_up
from tests.harness.images import TestImages
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(images: TestImages) -> Iterator[Cluster]:
    with skiff_up(images) as c:
        yield c


def guaranteed(cpu: str) -> dict[str, Any]:
    return {"requests": {"cpu": cpu, "memory": "64Mi"}, "limits": {"cpu": cpu, "memory": "64Mi"}}


def resize(cluster: Cluster, pod: str, cpu: str) -> None:
    patch = {"spec": {"containers": [{"name": "app", "resources": guaranteed(cpu)}]}}
    cluster.kubectl("patch", "pod", pod, "--subresource", "resize", "--patch", json.dumps(patch))


def cpu_max(cluster: Cluster, pod: str) -> str:
    """The container's cpu limit as cgroup v2's cpu.max says it ("QUOTA
    PERIOD"), read on the host from the cgroup an exec'd process is in:
    cpu.max under the unified hierarchy, or on a cgroup v1 host
    cpu.cfs_quota_us and cpu.cfs_period_us under the cpu controller's."""
    out = cluster.exec_read(pod, "cat", "/proc/self/cgroup")
    lines = [line.split(":", 2) for line in out.splitlines() if line.count(":") >= 2]
    cpu = next((ln for ln in lines if "cpu" in ln[1].split(",")), None)
    if cpu is None:  # cgroup v2 only
        path = next(ln[2] for ln in lines if ln[0] == "0")
        return (Path("/sys/fs/cgroup") / path.lstrip("/") / "cpu.max").read_text().strip()
    base = Path("/sys/fs/cgroup") / cpu[1] / cpu[2].lstrip("/")
    quota = int((base / "cpu.cfs_quota_us").read_text())
    period = (base / "cpu.cfs_period_us").read_text().strip()
    return f"{'max' if quota < 0 else quota} {period}"


def test_a_resize_is_applied_in_place_and_one_bigger_than_the_node_is_infeasible(
    cluster: Cluster,
) -> None:
    app = container("app", "sleep 3600", resources=guaranteed("100m"))
    cluster.api.create("Pod", busybox_pod("sized", app), "default")
    cluster.wait_phase("sized", "Running")
    assert cpu_max(cluster, "sized") == "10000 100000"

    resize(cluster, "sized", "200m")
    wait_for(lambda: cpu_max(cluster, "sized") == "20000 100000", timeout=20, interval=0.5,
             message="cpu.max of 200m in the container's cgroup")  # fmt: skip
    st = wait_for(
        lambda: (s := cluster.status("sized"))["containerStatuses"][0].get("resources")
        == guaranteed("200m") and s,
        timeout=20, interval=0.5, message="status.containerStatuses[0].resources at 200m",
    )  # fmt: skip
    assert st["containerStatuses"][0]["restartCount"] == 0

    resize(cluster, "sized", "1000")  # a thousand cores: no node has them

    def pending() -> dict[str, Any]:
        conds = cluster.status("sized").get("conditions") or []
        found: dict[str, Any] = next((c for c in conds if c["type"] == "PodResizePending"), {})
        return found

    cond = wait_for(pending, timeout=20, interval=0.5, message="PodResizePending")
    assert cond["reason"] == "Infeasible"
    assert cond["message"].startswith(
        "Node didn't have enough capacity: cpu, requested: 1000000, capacity: "
    ), cond["message"]
    st = cluster.status("sized")
    assert st["phase"] == "Running" and st["containerStatuses"][0]["restartCount"] == 0
    assert st["containerStatuses"][0]["resources"] == guaranteed("200m")
    assert cpu_max(cluster, "sized") == "20000 100000"

    resize(cluster, "sized", "300m")  # feasible again: allocated, the condition goes
    wait_for(lambda: not pending() and cpu_max(cluster, "sized") == "30000 100000",
             timeout=20, interval=0.5, message="the 300m resize applied")  # fmt: skip
    cluster.api.delete("Pod", "sized", "default")


def test_host_users_false_is_refused_with_the_kubelets_reason(cluster: Cluster) -> None:
    # skiff's runtime reports no user-namespace support (CRI Status
    # runtime_handlers[].features): the pod is never run in the host's
    # user namespace instead.
    cluster.api.create("Pod", busybox_pod("userns", container("app", "sleep 3600"),
                                          hostUsers=False), "default")  # fmt: skip

    def refused() -> dict[str, Any]:
        st = cluster.status("userns")
        waiting = ((st.get("containerStatuses") or [{}])[0].get("state") or {}).get("waiting")
        return st if "user namespaces" in (waiting or {}).get("message", "") else {}

    st = wait_for(refused, timeout=30, interval=0.5, message="hostUsers: false refused")
    waiting = st["containerStatuses"][0]["state"]["waiting"]
    assert waiting == {
        "reason": "ContainerCreating",
        "message": 'failed to create pod sandbox: RuntimeClass handler "" does not support'
        " user namespaces",
    }, waiting
    assert st["phase"] == "Pending"
    cluster.api.delete("Pod", "userns", "default")
