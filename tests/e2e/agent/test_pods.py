"""The node agent end to end, as root, with real runtimes.

A `skiff controlplane` process per module; a node per runtime kind, shared
by the module's tests and emptied after each (tests/e2e/agent/nodepool.py):
`skiff runtime` or a private containerd (the same tests, parametrized), and
a `skiff agent` process, with the node's own cgroups, bridge and pod CIDR.
Pods are bound directly (spec.nodeName); images come from the local
registry through the runtimes' mirror configs.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from agent.pod_cgroups import cgroup_mounts
from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.interface import ListOptions
from tests.e2e.agent.helpers import (
    E2EImages,
    condition,
    container_status,
    http_get,
    pod,
    status,
    wait_running,
)
from tests.harness.images.catalog import WEB_BODY
from tests.harness.nodeprocs import Node
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]


def test_pods_running_with_ip_and_reachable(
    node: Node, admin: GrpcApiClient, e2e_images: E2EImages
) -> None:
    names = ["web-0", "web-1"]
    for n in names:
        admin.create(
            "Pod",
            pod(
                n, node, [{"name": "c", "image": e2e_images.web, "ports": [{"containerPort": 80}]}]
            ),
            "default",
        )
    ips = set()
    for n in names:
        st = wait_running(admin, n)
        ip = st["podIP"]
        assert ip in _hosts(node.spec.pod_cidr), (ip, node.spec.pod_cidr)
        assert st["hostIP"] == "127.0.0.1"
        assert condition(st, "Ready")["status"] == "True"
        cs = st["containerStatuses"][0]
        assert cs["ready"] is True and cs["restartCount"] == 0 and "running" in cs["state"]
        assert cs["containerID"].startswith(("skiff://", "containerd://"))
        assert cs["imageID"]
        body = wait_for(partial(http_get, f"http://{ip}/"), timeout=15, message=f"GET {ip}")
        assert body == WEB_BODY
        ips.add(ip)
    assert len(ips) == 2


def _hosts(cidr: str) -> set[str]:
    import ipaddress

    return {str(h) for h in ipaddress.ip_network(cidr).hosts()}


def test_crash_loop_backoff(node: Node, admin: GrpcApiClient, e2e_images: E2EImages) -> None:
    admin.create(
        "Pod",
        pod(
            "crash",
            node,
            [{"name": "c", "image": e2e_images.busybox, "command": ["sh", "-c", "exit 3"]}],
        ),
        "default",
    )
    seen_backoff: list[dict[str, Any]] = []

    def looping() -> bool:
        cs = container_status(admin, "crash")
        waiting = (cs.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") == "CrashLoopBackOff":
            seen_backoff.append(waiting)
        return bool(seen_backoff) and int(cs.get("restartCount", 0)) >= 2

    wait_for(looping, timeout=40, message="restartCount >= 2 after a CrashLoopBackOff")
    msg = seen_backoff[0].get("message", "")
    assert re.search(r"back-off \d+s restarting failed container", msg), msg
    cs = container_status(admin, "crash")
    last = cs["lastState"]["terminated"]
    assert last["exitCode"] == 3 and last["reason"] == "Error"
    st = status(admin, "crash")
    assert st["phase"] == "Running"  # restartPolicy Always: it runs again


def test_liveness_failure_restarts_container(
    node: Node, admin: GrpcApiClient, e2e_images: E2EImages
) -> None:
    script = "touch /tmp/alive; sleep 2; rm /tmp/alive; exec sleep 3600"
    admin.create(
        "Pod",
        pod(
            "live",
            node,
            [
                {
                    "name": "c",
                    "image": e2e_images.busybox,
                    "command": ["sh", "-c", script],
                    "livenessProbe": {
                        "exec": {"command": ["cat", "/tmp/alive"]},
                        "periodSeconds": 1,
                        "failureThreshold": 1,
                    },
                }
            ],
        ),
        "default",
    )
    first = wait_running(admin, "live")["containerStatuses"][0]["containerID"]

    def restarted() -> dict[str, Any]:
        cs = container_status(admin, "live")
        return cs if int(cs.get("restartCount", 0)) >= 1 else {}

    cs = wait_for(restarted, timeout=30, message="liveness restart")
    last = cs["lastState"]["terminated"]
    assert last["containerID"] == first
    assert last["exitCode"] in (137, 143), last  # stopped by the agent, not by itself
    assert cs["containerID"] != first


def test_readiness_gating(node: Node, admin: GrpcApiClient, e2e_images: E2EImages) -> None:
    late = "sleep 3; exec httpd -f -p 80 -h /var/www"
    admin.create(
        "Pod",
        pod(
            "gated",
            node,
            [
                {
                    "name": "c",
                    "image": e2e_images.web,
                    "command": ["sh", "-c", late],
                    "readinessProbe": {
                        "httpGet": {"path": "/", "port": 80},
                        "periodSeconds": 1,
                        "failureThreshold": 1,
                    },
                },
                {
                    "name": "side",
                    "image": e2e_images.busybox,
                    "command": ["sh", "-c", "sleep 2; touch /tmp/ready; exec sleep 3600"],
                    "readinessProbe": {
                        "exec": {"command": ["cat", "/tmp/ready"]},
                        "periodSeconds": 1,
                    },
                },
            ],
        ),
        "default",
    )
    admin.create(
        "Pod",
        pod(
            "closed",
            node,
            [
                {
                    "name": "c",
                    "image": e2e_images.web,
                    "readinessProbe": {
                        "httpGet": {"path": "/", "port": 8081},
                        "periodSeconds": 1,
                        "failureThreshold": 1,
                    },
                }
            ],
        ),
        "default",
    )
    st = wait_running(admin, "gated")
    started = time.monotonic()
    assert condition(st, "Ready")["status"] == "False"
    assert not all(cs["ready"] for cs in st["containerStatuses"])

    def ready() -> dict[str, Any]:
        st = status(admin, "gated")
        return st if condition(st, "Ready").get("status") == "True" else {}

    st = wait_for(ready, timeout=30, message="gated pod Ready")
    assert time.monotonic() - started < 30
    assert all(cs["ready"] for cs in st["containerStatuses"])
    assert http_get(f"http://{st['podIP']}/") == WEB_BODY

    # A probe at a closed port: Running, never Ready, and the condition says so.
    wait_running(admin, "closed")

    def probed_a_while() -> dict[str, Any]:
        st = status(admin, "closed")
        cs = st["containerStatuses"][0]
        started_at = (cs.get("state") or {}).get("running", {}).get("startedAt")
        return st if started_at else {}

    wait_for(probed_a_while, timeout=10)
    with pytest.raises(AssertionError):
        wait_for(
            lambda: condition(status(admin, "closed"), "Ready").get("status") == "True", timeout=4
        )
    st = status(admin, "closed")
    ready_cond = condition(st, "Ready")
    assert ready_cond["status"] == "False" and ready_cond["reason"] == "ContainersNotReady"
    assert "[c]" in ready_cond.get("message", ""), ready_cond
    assert st["containerStatuses"][0]["ready"] is False


def test_oom_killed_reported(node: Node, admin: GrpcApiClient, e2e_images: E2EImages) -> None:
    # dd's 256 MiB block buffer is filled from /dev/zero: far over the 32 MiB
    # limit. dd is the container's own process (`exec`: a shell around it
    # would survive the kill and exit 0, which is reported as OOMKilled exit
    # 0). It starts a second after the container does, as a real workload
    # outgrows its limit: containerd 1.6's shim watches a task's cgroup for
    # OOM only once the task has started, so a kill within its first
    # milliseconds is reported as plain "Error" (seen once in make test: no
    # TaskOOM event in containerd's log, the task dead 40 ms after its start).
    admin.create(
        "Pod",
        pod(
            "oom",
            node,
            [
                {
                    "name": "c",
                    "image": e2e_images.busybox,
                    "command": [
                        "sh",
                        "-c",
                        "sleep 1; exec dd if=/dev/zero of=/dev/null bs=256M count=1",
                    ],
                    "resources": {"limits": {"memory": "32Mi"}},
                }
            ],
            restartPolicy="Never",
        ),
        "default",
    )

    def terminated() -> dict[str, Any]:
        cs = container_status(admin, "oom")
        t: dict[str, Any] = (cs.get("state") or {}).get("terminated") or {}
        return t

    t = wait_for(terminated, timeout=40, message="hog terminated")
    assert t["reason"] == "OOMKilled", t
    assert t["exitCode"] == 137, t
    assert status(admin, "oom")["phase"] == "Failed"


def test_graceful_termination_timing(
    node: Node, admin: GrpcApiClient, e2e_images: E2EImages
) -> None:
    grace = 3
    out = node.base / "term-out"
    out.mkdir()
    # Each says when its trap is set: a SIGTERM sent before that (the pod is
    # Running as soon as the shell starts) would meet the default action.
    trapping = "trap 'echo TERM > /out/trapped; exit 0' TERM; touch /out/trapper; while :; do sleep 0.1; done"
    ignoring = "trap '' TERM; touch /out/ignorer; while :; do sleep 0.1; done"
    for name, script in (("trapper", trapping), ("ignorer", ignoring)):
        admin.create(
            "Pod",
            pod(
                name,
                node,
                [
                    {
                        "name": "c",
                        "image": e2e_images.busybox,
                        "command": ["sh", "-c", script],
                        "volumeMounts": [{"name": "out", "mountPath": "/out"}],
                    }
                ],
                terminationGracePeriodSeconds=grace,
                volumes=[{"name": "out", "hostPath": {"path": str(out)}}],
            ),
            "default",
        )
    for name in ("trapper", "ignorer"):
        wait_running(admin, name)
        wait_for((out / name).exists, timeout=20, message=f"{name}'s trap set")

    def gone(name: str) -> bool:
        try:
            admin.get("Pod", name, "default")
        except Exception:  # NotFound
            return True
        return False

    elapsed = {}
    for name in ("trapper", "ignorer"):
        t0 = time.monotonic()
        admin.delete("Pod", name, "default")
        wait_for(partial(gone, name), timeout=grace + 20, message=f"{name} removed")
        elapsed[name] = time.monotonic() - t0
    assert (out / "trapped").read_text().strip() == "TERM"
    assert elapsed["trapper"] < grace, elapsed  # exited on SIGTERM, no SIGKILL wait
    assert grace <= elapsed["ignorer"] < grace + 10, elapsed  # SIGKILL after the grace period

    # The pods' own cgroups go with them (in every hierarchy), as the kubelet
    # removes them, once the agent has removed their sandboxes (which may
    # finish just after the API object is gone); the QoS directories stay.
    def leftover() -> list[Path]:
        root = node.pod_cgroup_root.strip("/")
        return [d for m in cgroup_mounts() for d in (m / root).glob("**/pod*") if d.is_dir()]

    wait_for(lambda: not leftover(), timeout=30, message="the pods' cgroups removed")


def test_agent_restart_keeps_healthy_containers(
    node: Node, admin: GrpcApiClient, e2e_images: E2EImages
) -> None:
    admin.create("Pod", pod("steady", node, [{"name": "c", "image": e2e_images.web}]), "default")
    before = wait_running(admin, "steady")["containerStatuses"][0]
    assert before["restartCount"] == 0
    cri = node.cri()
    try:
        ids_before = {c.id for c in cri.list_containers()}
        node.restart_agent(signal.SIGKILL)
        # The new agent is working once it runs a new pod.
        admin.create(
            "Pod",
            pod(
                "after",
                node,
                [{"name": "c", "image": e2e_images.busybox, "command": ["sleep", "3600"]}],
            ),
            "default",
        )
        wait_running(admin, "after")
        after = container_status(admin, "steady")
        assert after["containerID"] == before["containerID"]
        assert after["restartCount"] == 0 and "running" in after["state"]
        running = {c.id for c in cri.list_containers() if c.state == 1}  # CONTAINER_RUNNING
        assert ids_before <= running, (ids_before, running)
        assert http_get(f"http://{status(admin, 'steady')['podIP']}/") == WEB_BODY
    finally:
        cri.close()


def test_bad_image_and_bad_command(node: Node, admin: GrpcApiClient, e2e_images: E2EImages) -> None:
    # Every status the agent writes for noimage, seen on a watch opened before
    # the pod exists (ErrImagePull may last only until the next sync, too
    # short for polling to be sure to see it).
    reasons: dict[str, str] = {}
    watch = admin.watch(
        "Pod", "default", ListOptions(field_selector="metadata.name=noimage"),
        allow_bookmarks=False,
    )  # fmt: skip

    def collect() -> None:
        for event in watch:
            for cs in (event.object.get("status") or {}).get("containerStatuses") or []:
                w = (cs.get("state") or {}).get("waiting") or {}
                if w.get("reason"):
                    reasons.setdefault(w["reason"], w.get("message", ""))

    reader = threading.Thread(target=collect, daemon=True)
    reader.start()
    try:
        _bad_image_and_bad_command(node, admin, e2e_images, reasons)
    finally:
        watch.stop()
        reader.join(10)


def _bad_image_and_bad_command(
    node: Node, admin: GrpcApiClient, e2e_images: E2EImages, reasons: dict[str, str]
) -> None:
    admin.create(
        "Pod",
        pod("noimage", node, [{"name": "c", "image": "skiff-e2e/missing:1"}]),
        "default",
    )
    admin.create(
        "Pod",
        pod(
            "nocmd", node, [{"name": "c", "image": e2e_images.busybox, "command": ["/no/such/cmd"]}]
        ),
        "default",
    )

    def pull_backoff() -> bool:
        return "ErrImagePull" in reasons and "ImagePullBackOff" in reasons

    wait_for(pull_backoff, timeout=40, message="ErrImagePull then ImagePullBackOff on the watch")
    msg = reasons["ErrImagePull"]
    assert "skiff-e2e/missing" in msg and re.search(r"not found|manifest unknown", msg, re.I), msg

    def cmd_error() -> dict[str, Any]:
        cs = container_status(admin, "nocmd")
        st = cs.get("state") or {}
        w = st.get("waiting") or {}
        t = (cs.get("lastState") or {}).get("terminated") or st.get("terminated") or {}
        if w.get("reason") in ("RunContainerError", "CreateContainerError", "StartError"):
            return w
        if t.get("reason") in ("StartError", "ContainerCannotRun"):
            return t
        return {}

    err = wait_for(cmd_error, timeout=30, message="the CRI error in the container state")
    assert "/no/such/cmd" in err.get("message", ""), err
    assert re.search(r"no such file|not found", err["message"], re.I), err


@pytest.mark.parametrize("runtime_kind", ["skiff"], indirect=True)
def test_readiness_reason_names_probe_error(
    node: Node, admin: GrpcApiClient, e2e_images: E2EImages
) -> None:
    probe = {"tcpSocket": {"port": 8081}, "periodSeconds": 1, "failureThreshold": 1}
    admin.create(
        "Pod",
        pod("refused", node, [{"name": "c", "image": e2e_images.web, "readinessProbe": probe}]),
        "default",
    )
    wait_running(admin, "refused")

    def says_why() -> str:
        msg = str(condition(status(admin, "refused"), "Ready").get("message", ""))
        return msg if re.search(r"refused", msg, re.I) else ""

    wait_for(says_why, timeout=10, message="Ready condition message with the probe error")
