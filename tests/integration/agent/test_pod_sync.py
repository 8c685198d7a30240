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
from agent.pod_status import PodObservation, Waiting, compute_pod_status
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
            resize_errors=result.resize_errors,
            # no probes here: every running container is started and ready
            ready=frozenset(c.name for c in rec.containers if c.state == "running")
            if rec
            else frozenset(),
            started=frozenset(c.name for c in rec.containers if c.state == "running")
            if rec
            else frozenset(),
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


SIDECARS = (
    {"name": "s1", "image": "busybox:1", "restartPolicy": "Always"},
    {"name": "s2", "image": "busybox:1", "restartPolicy": "Always"},
)


def test_sidecars_start_in_order_and_the_app_runs_beside_them(h: Harness) -> None:
    pod = make_pod(init=SIDECARS)
    for _ in range(3):
        h.sync(pod)
    started = [n for n, req in h.fake.calls if n == "CreateContainer"]
    assert len(started) == 3
    order = [req.config.metadata.name for n, req in h.fake.calls if n == "CreateContainer"]
    assert order == ["s1", "s2", "c"]
    for name in ("s1", "s2", "c"):
        assert h.fake.container_by_name(name)[0].state == cri.CONTAINER_RUNNING
    st = h.status(pod, h.sync(pod))
    assert st["phase"] == "Running"
    init = {s["name"]: s for s in st["initContainerStatuses"]}
    assert init["s1"]["started"] is True and "running" in init["s1"]["state"]


def test_sidecars_stop_after_the_app_in_reverse_order(h: Harness) -> None:
    pod = make_pod(init=SIDECARS)
    for _ in range(3):
        h.sync(pod)
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    h.syncer.kill_pod(pod, h.view.relist()["uid-1"], grace=7)
    ids = {c.id: c.config.metadata.name for c in h.fake.containers.values()}
    stops = [ids[req.container_id] for n, req in h.fake.calls if n == "StopContainer"]
    assert stops == ["c", "s2", "s1"]


def test_a_job_pod_completes_while_its_sidecar_runs(h: Harness) -> None:
    pod = make_pod(policy="Never", init=SIDECARS[:1])
    h.sync(pod)
    h.sync(pod)
    h.fake.exit_container(h.fake.container_by_name("c")[0].id, 0)
    r = h.sync(pod)
    assert r.actions is not None and r.actions.kill_pod
    assert h.fake.container_by_name("s1")[0].state == cri.CONTAINER_EXITED
    assert h.status(pod, r)["phase"] == "Succeeded"


def test_an_exited_sidecar_restarts_under_restart_policy_never(h: Harness) -> None:
    pod = make_pod(policy="Never", init=SIDECARS[:1])
    h.sync(pod)
    h.sync(pod)
    first = h.fake.container_by_name("s1")[0]
    h.fake.exit_container(first.id, 1)
    h.sync(pod)
    latest = h.fake.container_by_name("s1")[0]
    assert latest.id != first.id and latest.state == cri.CONTAINER_RUNNING
    assert h.fake.container_by_name("c")[0].state == cri.CONTAINER_RUNNING


def test_an_ephemeral_container_shares_its_targets_process_namespace(h: Harness) -> None:
    pod = make_pod()
    h.sync(pod)
    pod["spec"]["ephemeralContainers"] = [
        {"name": "dbg", "image": "busybox:1", "targetContainerName": "c"},
        {"name": "lost", "image": "busybox:1", "targetContainerName": "gone"},
    ]
    r = h.sync(pod)
    (dbg,) = h.fake.container_by_name("dbg")
    opts = dbg.config.linux.security_context.namespace_options
    assert opts.pid == cri.TARGET and opts.target_id == h.fake.container_by_name("c")[0].id
    assert r.waiting["lost"].reason == "CreateContainerConfigError"
    st = h.status(pod, r)
    (eph, lost) = st["ephemeralContainerStatuses"]
    assert "running" in eph["state"] and eph["ready"] is False and "started" not in eph
    assert lost["state"]["waiting"]["reason"] == "CreateContainerConfigError"
    h.fake.exit_container(dbg.id, 0)
    h.sync(pod)
    assert len(h.fake.container_by_name("dbg")) == 1  # never restarted


def test_host_users_false_is_refused_when_the_runtime_has_no_user_namespaces(h: Harness) -> None:
    pod = make_pod()
    pod["spec"]["hostUsers"] = False
    r = h.sync(pod)
    assert r.waiting["c"] == Waiting(
        "ContainerCreating",
        'failed to create pod sandbox: RuntimeClass handler "" does not support user namespaces',
    )
    assert "RunPodSandbox" not in h.fake.call_names()


def resized(pod: dict[str, Any], cpu: str, memory: str) -> dict[str, Any]:
    pod["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": cpu, "memory": memory},
        "limits": {"cpu": cpu, "memory": memory},
    }
    return pod


def test_a_resize_is_applied_in_place_without_a_restart(h: Harness) -> None:
    pod = resized(make_pod(), "500m", "256Mi")
    h.sync(pod)
    (first,) = h.fake.container_by_name("c")
    r = h.sync(resized(pod, "1", "512Mi"))
    (same,) = h.fake.container_by_name("c")
    assert same.id == first.id and same.state == cri.CONTAINER_RUNNING
    res = same.config.linux.resources
    assert (res.cpu_quota, res.memory_limit_in_bytes) == (100_000, 512 << 20)
    assert r.resize_errors == {}
    before = len(h.fake.calls)
    h.sync(pod)  # applied: nothing more to do
    assert "UpdateContainerResources" not in [n for n, _ in h.fake.calls[before:]]


def test_a_resize_with_restart_container_policy_restarts_it(h: Harness) -> None:
    pod = resized(make_pod(), "500m", "256Mi")
    pod["spec"]["containers"][0]["resizePolicy"] = [
        {"resourceName": "memory", "restartPolicy": "RestartContainer"}
    ]
    h.sync(pod)
    (first,) = h.fake.container_by_name("c")
    h.sync(resized(pod, "500m", "512Mi"))
    assert first.state == cri.CONTAINER_EXITED
    h.sync(pod)
    latest = h.fake.container_by_name("c")[0]
    assert (
        latest.id != first.id and latest.config.linux.resources.memory_limit_in_bytes == 512 << 20
    )


def test_a_resize_the_runtime_refuses_is_reported(h: Harness) -> None:
    pod = resized(make_pod(), "500m", "256Mi")
    h.sync(pod)
    h.fake.fail_next["UpdateContainerResources"] = (grpc.StatusCode.INVALID_ARGUMENT, "no way")
    r = h.sync(resized(pod, "1", "256Mi"))
    assert r.resize_errors == {"c": "no way"}
    st = h.status(pod, r)
    cond = next(c for c in st["conditions"] if c["type"] == "PodResizeInProgress")
    assert (cond["status"], cond["reason"], cond["message"]) == ("True", "Error", "c: no way")
    # What the container's status reports: the resources it still runs with.
    (c,) = h.fake.container_by_name("c")
    assert h.syncer.resizer.applied(c.id) == {
        "requests": {"cpu": "500m", "memory": "256Mi"},
        "limits": {"cpu": "500m", "memory": "256Mi"},
    }
    h.sync(resized(pod, "1", "256Mi"))  # retried at the next sync, now accepted
    assert h.syncer.resizer.applied(c.id)["limits"]["cpu"] == "1"  # type: ignore[index]


def test_a_native_sidecar_is_resized_in_place_too(h: Harness) -> None:
    sidecar = {"name": "s", "image": "busybox:1.36", "restartPolicy": "Always",
               "resources": {"limits": {"cpu": "500m"}}}  # fmt: skip
    pod = make_pod(init=(sidecar,))
    h.sync(pod)
    (first,) = h.fake.container_by_name("s")
    pod["spec"]["initContainers"][0]["resources"] = {"limits": {"cpu": "1"}}
    h.sync(pod)
    (same,) = h.fake.container_by_name("s")
    assert same.id == first.id and same.config.linux.resources.cpu_quota == 100_000


def test_sidecars_without_startup_probes_and_the_app_start_in_one_sync(h: Harness) -> None:
    pod = make_pod(init=SIDECARS)
    h.sync(pod)
    for name in ("s1", "s2", "c"):
        assert h.fake.container_by_name(name)[0].state == cri.CONTAINER_RUNNING
    probed = make_pod(init=({**SIDECARS[0], "startupProbe": {"exec": {"command": ["true"]}}},))
    probed["metadata"]["uid"] = "uid-2"
    h.sync(probed)
    assert not [
        c
        for c in h.fake.container_by_name("c")
        if c.config.labels["io.kubernetes.pod.uid"] == "uid-2"
    ]


def test_seccomp_localhost_profile_confined_to_the_seccomp_root(h: Harness) -> None:
    """The runtime loads CRI's localhost_ref as given (as containerd does), so
    the agent confines a pod's localhostProfile to its seccomp root (issue 32):
    relative paths join the root; absolute ones and `..` never reach the runtime."""

    def with_profile(ref: str, name: str = "c") -> dict[str, Any]:
        sc = {"seccompProfile": {"type": "Localhost", "localhostProfile": ref}}
        return {"name": name, "image": "busybox:1.36", "securityContext": sc}

    for ref in ("/etc/shadow", "../../../etc/x.json", "profiles/../../x.json", ""):
        r = h.sync(make_pod(with_profile(ref)))
        assert r.waiting["c"].reason == "CreateContainerConfigError", ref
        assert "localhostProfile" in r.waiting["c"].message, ref
        assert "CreateContainer" not in h.fake.call_names(), ref
    r = h.sync(make_pod(with_profile("profiles/audit.json")))
    assert r.waiting == {}
    (c,) = h.fake.container_by_name("c")
    sec = c.config.linux.security_context
    assert sec.seccomp.localhost_ref == "/var/lib/skiff/seccomp/profiles/audit.json"
    assert sec.seccomp_profile_path == "localhost//var/lib/skiff/seccomp/profiles/audit.json"
