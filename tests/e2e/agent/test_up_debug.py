"""`kubectl debug` and `kubectl attach` on `skiff up` (issue 33).

kubectl 1.33 adds an ephemeral container through pods/ephemeralcontainers;
the agent starts it in the pod's namespaces, sharing the target
container's process namespace (`--target`): `ps` in it shows the target's
`sleep`. Its status is in status.ephemeralContainerStatuses, and `kubectl
attach` reaches a running ephemeral container. Before, kubectl said `the
server could not find the requested resource`.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.agent.kubelet_up import BUSYBOX, KUBECTL, Cluster, busybox_pod, container, skiff_up
from tests.harness.images import TestImages
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(images: TestImages) -> Iterator[Cluster]:
    with skiff_up(images) as c:
        yield c


def ephemeral_status(cluster: Cluster, pod: str, name: str) -> dict[str, Any]:
    for s in cluster.status(pod).get("ephemeralContainerStatuses") or []:
        if s["name"] == name:
            found: dict[str, Any] = s
            return found
    return {}


def test_kubectl_debug_shares_the_targets_processes_and_attach_reaches_it(
    cluster: Cluster,
) -> None:
    cluster.api.create("Pod", busybox_pod("web", container("app", "sleep 3600")), "default")
    cluster.wait_phase("web", "Running")
    done = cluster.kubectl(
        "debug", "web", "-i", f"--image={BUSYBOX}", "--image-pull-policy=Never",
        "--target=app", "-c", "dbg", "--", "sh",
        input="ps -o pid,args\nexit\n", timeout=90,
    )  # fmt: skip
    assert "sleep 3600" in done.stdout, done.stdout + done.stderr
    st = wait_for(
        lambda: ephemeral_status(cluster, "web", "dbg").get("state", {}).get("terminated"),
        timeout=30, interval=0.3, message="dbg terminated in ephemeralContainerStatuses",
    )  # fmt: skip
    assert st["exitCode"] == 0

    # A long-running one, then `kubectl attach` to it.
    cluster.kubectl(
        "debug", "web", f"--image={BUSYBOX}", "--image-pull-policy=Never", "-c", "ticker",
        "--", "sh", "-c", "while true; do echo tick; sleep 0.5; done",
    )  # fmt: skip
    wait_for(
        lambda: "running" in ephemeral_status(cluster, "web", "ticker").get("state", {}),
        timeout=30, interval=0.3, message="ticker running",
    )  # fmt: skip
    attach = subprocess.Popen(
        [str(KUBECTL), "--kubeconfig", str(cluster.kubeconfig), "attach", "web", "-c", "ticker"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert attach.stdout is not None
        line = attach.stdout.readline()
        assert line.strip() == "tick", line
    finally:
        attach.kill()
        attach.wait()
    logs = cluster.kubectl("logs", "web", "-c", "ticker").stdout
    assert "tick" in logs
    # The app container never restarted for any of it.
    assert cluster.status("web")["containerStatuses"][0]["restartCount"] == 0
    cluster.api.delete("Pod", "web", "default")


def test_kubectl_debug_with_a_missing_target_gets_kubernetes_error(cluster: Cluster) -> None:
    cluster.api.create("Pod", busybox_pod("lonely", container("app", "sleep 3600")), "default")
    cluster.wait_phase("lonely", "Running")
    done = cluster.kubectl("debug", "lonely", f"--image={BUSYBOX}", "--target=nosuch",
                           check=False)  # fmt: skip
    assert done.returncode != 0
    assert 'targetContainerName: Not found: "nosuch"' in done.stderr, done.stderr
    assert cluster.status("lonely")["phase"] == "Running"
    cluster.api.delete("Pod", "lonely", "default")
