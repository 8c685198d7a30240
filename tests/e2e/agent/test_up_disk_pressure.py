"""Disk pressure on `skiff up` clears after an eviction (issue 33).

The agent's root (the nodefs signal: pods' emptyDirs) is a 64 MiB tmpfs of
the test's own, and the eviction thresholds come in as a user sets them,
with k3s' flag: `skiff up --kubelet-arg eviction-hard=nodefs.available<24Mi
--kubelet-arg eviction-pressure-transition-period=5s`. A BestEffort pod
fills its emptyDir with 48 MiB; the node reports DiskPressure, the filler is
evicted (Failed, Evicted, naming ephemeral-storage), its volumes are
removed, DiskPressure clears, and the bystander pod keeps running.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.agent.kubelet_up import Cluster, busybox_pod, container, skiff_up
from tests.harness.images import TestImages
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]

NODE_ARGS = (
    "--kubelet-arg", "eviction-hard=nodefs.available<24Mi",
    "--kubelet-arg", "eviction-pressure-transition-period=5s",
)  # fmt: skip


@pytest.fixture(scope="module")
def cluster(images: TestImages) -> Iterator[Cluster]:
    with skiff_up(images, name="dp", up_args=NODE_ARGS, agent_root_tmpfs="64m") as c:
        yield c


def conditions(c: Cluster) -> dict[str, str]:
    [node] = c.api.list("Node").items
    return {k["type"]: k["status"] for k in node["status"]["conditions"]}


def test_an_eviction_frees_the_disk_and_disk_pressure_clears(cluster: Cluster) -> None:
    c = cluster
    c.api.create("Pod", busybox_pod("bystander", container("c", "sleep 3600")), "default")
    c.wait_phase("bystander", "Running")
    assert conditions(c).get("DiskPressure") == "False"
    fill = "dd if=/dev/zero of=/scratch/fill bs=1M count=48; sleep 3600"
    mount = {"volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]}
    filler = busybox_pod("filler", container("c", fill, **mount),
                         volumes=[{"name": "scratch", "emptyDir": {}}])  # fmt: skip
    c.api.create("Pod", filler, "default")
    st = c.wait_phase("filler", "Failed", timeout=120)
    assert st.get("reason") == "Evicted" and "ephemeral-storage" in st.get("message", ""), st
    uid = c.api.get("Pod", "filler", "default")["metadata"]["uid"]
    volumes = c.up.layout.agent_root / "pods" / uid / "volumes"
    wait_for(lambda: not volumes.exists(), timeout=30, interval=0.2,
             message="the evicted pod's volumes removed")  # fmt: skip
    wait_for(lambda: conditions(c).get("DiskPressure") == "False", timeout=60, interval=0.5,
             message="DiskPressure to clear after the eviction")  # fmt: skip
    assert c.status("bystander")["phase"] == "Running"
