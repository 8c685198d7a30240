"""A disk-pressure eviction relieves the pressure (issue 33).

The node's agent root (where pods' emptyDirs live, the nodefs signal) is a
64 MiB tmpfs of the test's own, with a hard threshold nodefs.available<24Mi
and a 5 s pressure transition period. A BestEffort pod fills its emptyDir
with 48 MiB; the agent reports DiskPressure and evicts it (Failed,
Evicted); its volumes are removed as the kubelet removes a terminated
pod's, so the space comes back and DiskPressure clears, and the bystander
pod is never evicted. Before, the evicted pod's emptyDir stayed on disk:
DiskPressure stayed True and the agent went on to evict the bystander.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.client.apiclient import GrpcApiClient
from tests.e2e.agent.helpers import E2EImages, delete_node_pods, dump, pod, status, wait_running
from tests.harness.controlplane import ControlPlane
from tests.harness.nodeprocs import Node, NodeSpec, short_tempdir
from tests.harness.registry import Registry
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def tiny_disk_node(
    control_plane: ControlPlane, admin: GrpcApiClient, registry: Registry, e2e_images: E2EImages
) -> Iterator[Node]:
    args = (
        "--eviction-hard", "nodefs.available<24Mi",
        "--eviction-pressure-transition-period", "5s",
    )  # fmt: skip
    n = Node(
        spec=NodeSpec.unique(),
        base=short_tempdir("ske2e-"),
        server=f"127.0.0.1:{control_plane.port}",
        cp_data_dir=control_plane.data_dir,
        runtime_kind="skiff",
        registry_url=registry.url,
        agent_args=args,
    )
    root = n.base / "agent"
    root.mkdir()
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(root)], check=True)
        n.start()
        n.wait_ready(admin)
        yield n
    except BaseException:
        dump(admin, n)
        raise
    finally:
        try:
            delete_node_pods(admin, n.spec.name)
        finally:
            n.cleanup()  # unmounts everything under its base, the tmpfs too


def conditions(admin: GrpcApiClient, node: str) -> dict[str, str]:
    got = admin.get("Node", node)
    return {c["type"]: c["status"] for c in got["status"]["conditions"]}


def test_an_eviction_frees_the_disk_and_disk_pressure_clears(
    tiny_disk_node: Node, admin: GrpcApiClient, e2e_images: E2EImages
) -> None:
    n = tiny_disk_node
    sleeper: dict[str, Any] = {
        "name": "c",
        "image": e2e_images.busybox,
        "command": ["sleep", "3600"],
    }
    admin.create("Pod", pod("bystander", n, [sleeper]), "default")
    wait_running(admin, "bystander")
    assert conditions(admin, n.spec.name).get("DiskPressure") == "False"
    filler = {
        "name": "c",
        "image": e2e_images.busybox,
        "command": ["sh", "-c", "dd if=/dev/zero of=/scratch/fill bs=1M count=48; sleep 3600"],
        "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
    }
    admin.create(
        "Pod", pod("filler", n, [filler], volumes=[{"name": "scratch", "emptyDir": {}}]), "default"
    )

    def evicted() -> dict[str, Any]:
        st = status(admin, "filler")
        return st if st.get("phase") == "Failed" else {}

    st = wait_for(evicted, timeout=90, interval=0.2, message="the filler evicted")
    assert st["reason"] == "Evicted" and "ephemeral-storage" in st["message"], st
    uid = admin.get("Pod", "filler", "default")["metadata"]["uid"]
    wait_for(
        lambda: not (n.base / "agent" / "pods" / uid / "volumes").exists(),
        timeout=30,
        interval=0.2,
        message="the evicted pod's volumes removed",
    )
    wait_for(
        lambda: conditions(admin, n.spec.name).get("DiskPressure") == "False",
        timeout=60,
        interval=0.5,
        message="DiskPressure to clear after the eviction",
    )
    assert status(admin, "bystander")["phase"] == "Running"
