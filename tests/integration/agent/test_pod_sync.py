"""SyncPod against the in-memory CRI runtime, through a real gRPC socket."""

import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from agent.backoff import Backoff
from agent.cri_client import CRIClient
from agent.pod_config import NodeSettings
from agent.pod_status import PodObservation, compute_pod_status
from agent.pod_sync import PodSyncer, SyncDeps, SyncResult
from agent.runtime_view import RuntimeView
from agent.volumes import VolumeSources
from proto.runtime.v1 import api_pb2 as cri
from tests.fakes.fake_runtime import FakeRuntime, serve_fake_runtime


class Clock:
    """Wall-clock based (CRI timestamps are wall time) but moved by hand."""

    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t


class Harness:
    def __init__(self, fake: FakeRuntime, client: CRIClient, root: Path) -> None:
        self.fake = fake
        self.clock = Clock()
        self.view = RuntimeView(client)
        cms = {("default", "cfg"): {"k": "v"}}
        self.syncer = PodSyncer(
            SyncDeps(
                runtime=client,
                node=NodeSettings(log_root=str(root / "logs"), node_name="n1"),
                root=root,
                memory_capacity=1 << 30,
                now=self.clock,
                volumes=VolumeSources(
                    configmaps=lambda ns, n: None, secrets=lambda ns, n: None, node=NodeSettings()
                ),
                config_data=lambda ns, n: cms.get((ns, n)),
                secret_data=lambda ns, n: None,
                backoff=Backoff(self.clock),
                image_backoff=Backoff(self.clock),
            )
        )

    def sync(
        self, pod: dict[str, Any], liveness_failed: frozenset[str] = frozenset()
    ) -> SyncResult:
        rec = self.view.relist().get(pod["metadata"]["uid"])
        return self.syncer.sync(pod, rec, liveness_failed)

    def status(self, pod: dict[str, Any], result: SyncResult) -> dict[str, Any]:
        rec = self.view.relist().get(pod["metadata"]["uid"])
        obs = PodObservation(
            sandbox_ready=True,
            pod_ips=result.pod_ips,
            containers=tuple(rec.containers) if rec else (),
            waiting=result.waiting,
        )
        return compute_pod_status(pod, obs, self.clock())


@pytest.fixture
def h() -> Iterator[Harness]:
    d = Path(tempfile.mkdtemp(prefix="skcri", dir="/tmp"))
    try:
        with serve_fake_runtime(d / "cri.sock") as fake:
            client = CRIClient(f"unix://{d}/cri.sock", timeout=5)
            try:
                yield Harness(fake, client, d)
            finally:
                client.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def make_pod(
    *containers: dict[str, Any], policy: str = "Always", init: tuple[dict[str, Any], ...] = ()
) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "default", "uid": "uid-1"},
        "spec": {
            "restartPolicy": policy,
            "containers": list(containers) or [{"name": "c", "image": "busybox:1.36"}],
            "initContainers": list(init),
            "terminationGracePeriodSeconds": 7,
        },
    }


def test_new_pod_runs_sandbox_pull_create_start(h: Harness) -> None:
    pod = make_pod()
    r = h.sync(pod)
    assert r.waiting == {} and r.pod_ips and r.pod_ips[0].startswith("10.88.0.")
    names = h.fake.call_names()
    for rpc in ("RunPodSandbox", "ImageStatus", "PullImage", "CreateContainer", "StartContainer"):
        assert rpc in names
    assert (
        names.index("RunPodSandbox")
        < names.index("CreateContainer")
        < names.index("StartContainer")
    )
    (c,) = h.fake.container_by_name("c")
    assert c.state == cri.CONTAINER_RUNNING
    assert c.config.log_path == "c/0.log"
    assert c.config.labels["io.kubernetes.pod.uid"] == "uid-1"
    assert (h.syncer.d.root / "logs" / "default_web_uid-1").is_dir()
    # A second sync changes nothing.
    before = len(h.fake.calls)
    h.sync(pod)
    assert [
        n
        for n, _ in h.fake.calls[before:]
        if n not in ("ListPodSandbox", "ListContainers", "ContainerStatus", "PodSandboxStatus")
    ] == []
    assert h.status(pod, r)["phase"] == "Running"


def test_crash_loop_backoff(h: Harness) -> None:
    pod = make_pod()
    h.sync(pod)
    h.fake.exit_container(h.fake.container_by_name("c")[0].id, 1)
    r = h.sync(pod)  # first restart is immediate
    assert r.waiting == {} and h.fake.container_by_name("c")[0].config.metadata.attempt == 1
    h.fake.exit_container(h.fake.container_by_name("c")[0].id, 1)
    r = h.sync(pod)
    assert r.waiting["c"].reason == "CrashLoopBackOff" and "back-off 10s" in r.waiting["c"].message
    status = h.status(pod, r)["containerStatuses"][0]
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert status["lastState"]["terminated"]["exitCode"] == 1 and status["restartCount"] == 1
    h.clock.t += 11
    r = h.sync(pod)
    assert r.waiting == {} and h.fake.container_by_name("c")[0].config.metadata.attempt == 2


def test_a_container_that_never_started_backs_off_too(h: Harness) -> None:
    # StartContainer failed (containerd: exited, exit code 128, no startedAt):
    # it ran for no time at all, which must not reset the back-off as a long
    # run does (it used to: restarted ~10 times a second).
    pod = make_pod()
    h.sync(pod)
    for _ in range(2):
        c = h.fake.container_by_name("c")[0]
        h.fake.exit_container(c.id, 128, "StartError")
        c.started_at = 0
        r = h.sync(pod)
    assert r.waiting["c"].reason == "CrashLoopBackOff" and "back-off 10s" in r.waiting["c"].message


def test_image_pull_errors_then_backoff(h: Harness) -> None:
    h.fake.missing_images.add("nope:1")
    pod = make_pod({"name": "c", "image": "nope:1"})
    r = h.sync(pod)
    assert r.waiting["c"].reason == "ErrImagePull" and "manifest unknown" in r.waiting["c"].message
    r = h.sync(pod)
    assert r.waiting["c"].reason == "ImagePullBackOff"
    h.clock.t += 11
    h.fake.missing_images.clear()
    assert h.sync(pod).waiting == {}


def test_never_pull_policy_without_image(h: Harness) -> None:
    r = h.sync(make_pod({"name": "c", "image": "busybox:9", "imagePullPolicy": "Never"}))
    assert r.waiting["c"].reason == "ErrImageNeverPull"
    assert "PullImage" not in h.fake.call_names()


def test_config_and_start_errors(h: Harness) -> None:
    bad = {
        "name": "c",
        "image": "busybox:1",
        "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "k"}}}],
    }
    r = h.sync(make_pod(bad))
    assert r.waiting["c"].reason == "CreateContainerConfigError"
    h.fake.start_failures["d"] = 'exec: "nope": executable file not found in $PATH'
    r = h.sync(make_pod({"name": "d", "image": "busybox:1"}))
    assert (
        r.waiting["d"].reason == "RunContainerError"
        and "executable file not found" in r.waiting["d"].message
    )


def test_init_containers_then_app(h: Harness) -> None:
    pod = make_pod(
        init=({"name": "i1", "image": "busybox:1"}, {"name": "i2", "image": "busybox:1"})
    )
    h.sync(pod)
    assert [c.config.metadata.name for c in h.fake.containers.values()] == ["i1"]
    h.sync(pod)  # i1 still running: nothing new
    assert len(h.fake.containers) == 1
    h.fake.exit_container(h.fake.container_by_name("i1")[0].id, 0)
    h.sync(pod)
    h.fake.exit_container(h.fake.container_by_name("i2")[0].id, 0)
    h.sync(pod)
    assert h.fake.container_by_name("c")[0].state == cri.CONTAINER_RUNNING


def test_liveness_failure_restarts(h: Harness) -> None:
    pod = make_pod()
    h.sync(pod)
    first = h.fake.container_by_name("c")[0]
    h.sync(pod, liveness_failed=frozenset({"c"}))
    assert first.state == cri.CONTAINER_EXITED
    latest = h.fake.container_by_name("c")[0]
    assert latest.id != first.id and latest.state == cri.CONTAINER_RUNNING


def test_graceful_termination_runs_prestop(h: Harness) -> None:
    pod = make_pod(
        {
            "name": "c",
            "image": "busybox:1",
            "lifecycle": {"preStop": {"exec": {"command": ["nginx", "-s", "quit"]}}},
        }
    )
    h.sync(pod)
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    rec = h.view.relist()["uid-1"]
    h.syncer.kill_pod(pod, rec, grace=7)
    names = h.fake.call_names()
    assert names.index("ExecSync") < names.index("StopContainer") < names.index("StopPodSandbox")
    stop = next(req for n, req in h.fake.calls if n == "StopContainer")
    assert 0 < stop.timeout <= 7
    h.syncer.remove_pod(h.view.relist()["uid-1"])
    assert not h.fake.sandboxes and not h.fake.containers


def test_completed_pod_releases_sandbox(h: Harness) -> None:
    pod = make_pod(policy="Never")
    h.sync(pod)
    h.fake.exit_container(h.fake.container_by_name("c")[0].id, 0)
    r = h.sync(pod)
    assert r.actions is not None and r.actions.kill_pod and not r.actions.create_sandbox
    assert all(sb.state == cri.SANDBOX_NOTREADY for sb in h.fake.sandboxes.values())


def test_sandbox_failure_reported(h: Harness) -> None:
    h.fake.fail_next["RunPodSandbox"] = (grpc.StatusCode.UNKNOWN, "cni: no IP addresses available")
    r = h.sync(make_pod())
    assert (
        r.waiting["c"].reason == "ContainerCreating" and "no IP addresses" in r.waiting["c"].message
    )


def test_post_start_hook_runs_after_start_and_a_failure_kills_the_container(h: Harness) -> None:
    hook = {"postStart": {"exec": {"command": ["touch", "/ready"]}}}
    pod = make_pod({"name": "c", "image": "busybox:1", "lifecycle": hook})
    r = h.sync(pod)
    assert r.waiting == {}
    names = h.fake.call_names()
    assert names.index("StartContainer") < names.index("ExecSync")
    (c,) = h.fake.container_by_name("c")
    assert c.state == cri.CONTAINER_RUNNING

    failing = make_pod(
        {
            "name": "c",
            "image": "busybox:1",
            "lifecycle": {"postStart": {"exec": {"command": ["false"]}}},
        }
    )
    failing["metadata"]["uid"] = "uid-2"
    h.fake.exec_results[("false",)] = (1, b"", b"nope")
    r = h.sync(failing)
    assert r.waiting["c"].reason == "PostStartHookError"
    assert (
        r.waiting["c"].message.startswith("FailedPostStartHook:")
        and "nope" in r.waiting["c"].message
    )
    dead = [
        x
        for x in h.fake.container_by_name("c")
        if x.config.labels["io.kubernetes.pod.uid"] == "uid-2"
    ]
    assert dead and dead[0].state == cri.CONTAINER_EXITED


def test_post_start_http_hook_failure(h: Harness) -> None:
    hook = {"postStart": {"httpGet": {"host": "127.0.0.1", "port": 1, "path": "/hook"}}}
    r = h.sync(make_pod({"name": "c", "image": "busybox:1", "lifecycle": hook}))
    assert r.waiting["c"].reason == "PostStartHookError"
