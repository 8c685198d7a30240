"""Native sidecars on `skiff up` (issue 33): init containers with
restartPolicy Always start in the init sequence, keep running beside the
app containers and count in the pod's readiness; a Job's pod completes when
its app container does while its sidecar still runs.

Before, the agent waited for every init container to exit, so a pod with a
sidecar never got past its init containers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.client.interface import ListOptions
from tests.e2e.agent.kubelet_up import Cluster, busybox_pod, container, skiff_up
from tests.harness.images import TestImages
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]

FEED = "while true; do date > /shared/f.tmp && mv /shared/f.tmp /shared/feed; sleep 1; done"
HAS_FEED: dict[str, Any] = {"exec": {"command": ["test", "-s", "/shared/feed"]}, "periodSeconds": 1}
SHARED = [{"name": "shared", "mountPath": "/shared"}]


@pytest.fixture(scope="module")
def cluster(images: TestImages) -> Iterator[Cluster]:
    with skiff_up(images) as c:
        yield c


def test_a_sidecar_feeds_the_app_through_a_shared_volume_and_both_are_ready(
    cluster: Cluster,
) -> None:
    feeder = container("feeder", FEED, restartPolicy="Always", volumeMounts=SHARED,
                       startupProbe=HAS_FEED, readinessProbe=HAS_FEED)  # fmt: skip
    # A regular init container after the sidecar: it runs only once the
    # sidecar has started (its startup probe passed), so the feed is there.
    check = container("check", "test -s /shared/feed", volumeMounts=SHARED)
    app = container(
        "app",
        "while true; do cp /shared/feed /tmp/seen; sleep 1; done",
        volumeMounts=SHARED,
        readinessProbe={"exec": {"command": ["test", "-s", "/tmp/seen"]}, "periodSeconds": 1},
    )
    pod = busybox_pod("fed", app, initContainers=[feeder, check],
                      volumes=[{"name": "shared", "emptyDir": {}}])  # fmt: skip
    cluster.api.create("Pod", pod, "default")
    st = cluster.wait_ready("fed")
    init = {s["name"]: s for s in st["initContainerStatuses"]}
    assert init["feeder"]["started"] is True and init["feeder"]["ready"] is True
    assert "running" in init["feeder"]["state"], init["feeder"]
    assert init["check"]["state"]["terminated"]["exitCode"] == 0, init["check"]
    (app_status,) = st["containerStatuses"]
    assert app_status["ready"] is True and "running" in app_status["state"]
    conds = {c["type"]: c["status"] for c in st["conditions"]}
    assert conds["Initialized"] == conds["ContainersReady"] == "True", conds
    # The app reads what the sidecar keeps writing.
    first = cluster.exec_read("fed", "cat", "/tmp/seen", container="app")
    assert first.strip()
    wait_for(
        lambda: cluster.exec_read("fed", "cat", "/tmp/seen", container="app") != first,
        timeout=15,
        interval=0.5,
        message="the app to see the sidecar's next line",
    )
    # kubectl shows the sidecar with its pod: 2/2 ready.
    out = cluster.kubectl("get", "pod", "fed", "--no-headers").stdout.split()
    assert out[1] == "2/2" and out[2] == "Running", out
    cluster.api.delete("Pod", "fed", "default")


def test_a_sidecar_that_exits_is_restarted_under_restart_policy_never(cluster: Cluster) -> None:
    flaky = container("flaky", "sleep 1; exit 3", restartPolicy="Always")
    app = container("app", "sleep 3600")
    cluster.api.create("Pod", busybox_pod("flaky", app, initContainers=[flaky],
                                          restartPolicy="Never"), "default")  # fmt: skip

    def restarted() -> bool:
        init = cluster.status("flaky").get("initContainerStatuses") or []
        return bool(init) and init[0]["restartCount"] >= 1

    wait_for(restarted, timeout=60, interval=0.3, message="the sidecar restarted")
    st = cluster.status("flaky")
    assert st["phase"] == "Running" and "running" in st["containerStatuses"][0]["state"]
    cluster.api.delete("Pod", "flaky", "default")


def test_a_job_completes_when_its_app_container_finishes_while_the_sidecar_runs(
    cluster: Cluster,
) -> None:
    side = container("logger", "sleep 3600", restartPolicy="Always")
    work = container("work", "sleep 2; echo done")
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "with-sidecar", "namespace": "default"},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 2,
                    "initContainers": [side],
                    "containers": [work],
                }
            },
        },
    }
    cluster.api.create("Job", job, "default")

    def complete() -> dict[str, Any]:
        st = cluster.api.get("Job", "with-sidecar", "default").get("status") or {}
        conds = {c["type"]: c["status"] for c in st.get("conditions") or []}
        return st if conds.get("Complete") == "True" else {}

    st = wait_for(complete, timeout=90, interval=0.3, message="the Job Complete")
    assert st.get("succeeded") == 1, st
    (pod,) = cluster.api.list(
        "Pod", "default", ListOptions(label_selector="job-name=with-sidecar")
    ).items
    pst = pod["status"]
    assert pst["phase"] == "Succeeded", pst
    assert pst["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    # The sidecar was stopped once the app finished.
    assert "terminated" in pst["initContainerStatuses"][0]["state"], pst
    cluster.api.delete("Job", "with-sidecar", "default")


def test_a_sidecar_whose_image_cannot_be_pulled_holds_the_app_back_with_kubernetes_event(
    cluster: Cluster,
) -> None:
    # No registry is reachable from this skiff up: the pull fails.
    missing = "docker.io/skiff-e2e/missing:1"
    ok = container("ok", "sleep 3600", restartPolicy="Always")
    broken = {"name": "broken", "image": missing, "restartPolicy": "Always"}
    app = container("app", "sleep 3600")
    cluster.api.create("Pod", busybox_pod("nopull", app, initContainers=[ok, broken]), "default")

    def pull_failed() -> dict[str, Any]:
        init = {s["name"]: s for s in cluster.status("nopull").get("initContainerStatuses") or []}
        waiting = (init.get("broken") or {}).get("state", {}).get("waiting") or {}
        return init if waiting.get("reason") in ("ErrImagePull", "ImagePullBackOff") else {}

    init = wait_for(pull_failed, timeout=60, interval=0.3, message="the sidecar's pull failed")
    # The sidecar before it keeps running; the app waits for the init sequence.
    assert "running" in init["ok"]["state"] and init["ok"]["started"] is True, init["ok"]
    st = cluster.status("nopull")
    assert st["phase"] == "Pending", st
    assert st["containerStatuses"][0]["state"]["waiting"]["reason"] == "PodInitializing"

    def failed_event() -> list[dict[str, Any]]:
        return [e for e in cluster.api.list("Event", "default", ListOptions()).items
                if e.get("reason") == "Failed" and e["involvedObject"]["name"] == "nopull"]  # fmt: skip

    (event,) = wait_for(failed_event, timeout=30, interval=0.5, message="a Failed event")
    assert event["type"] == "Warning", event
    assert event["message"].startswith(f'Failed to pull image "{missing}": '), event
    assert event["involvedObject"]["fieldPath"] == "spec.initContainers{broken}", event
    out = cluster.kubectl("get", "pod", "nopull", "--no-headers").stdout.split()
    assert out[2] in ("Init:ErrImagePull", "Init:ImagePullBackOff"), out
    cluster.api.delete("Pod", "nopull", "default")
