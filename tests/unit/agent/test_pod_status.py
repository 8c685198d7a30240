from typing import Any

import pytest

from agent.pod_status import ContainerInfo, PodObservation, Waiting, compute_pod_status

NOW = 1_700_000_000.0


def make_pod(policy: str = "Always", init: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": policy,
        "containers": [{"name": "a", "image": "busybox"}, {"name": "b", "image": "busybox"}],
    }
    if init:
        spec["initContainers"] = [{"name": "i", "image": "busybox"}]
    return {"metadata": {"name": "p", "uid": "u"}, "spec": spec}


def run(name: str, attempt: int = 0) -> ContainerInfo:
    return ContainerInfo(
        id=f"{name}{attempt}",
        name=name,
        state="running",
        attempt=attempt,
        started_at=NOW - 5,
        image_ref="sha256:x",
    )


def done(name: str, code: int, attempt: int = 0, reason: str = "") -> ContainerInfo:
    return ContainerInfo(
        id=f"{name}{attempt}",
        name=name,
        state="exited",
        attempt=attempt,
        exit_code=code,
        started_at=NOW - 9,
        finished_at=NOW - 1,
        reason=reason,
    )


def status(pod: dict[str, Any], *containers: ContainerInfo, **kw: Any) -> dict[str, Any]:
    obs = PodObservation(sandbox_ready=True, pod_ips=("10.244.0.9",), containers=containers, **kw)
    return compute_pod_status(pod, obs, NOW, host_ip="192.0.2.1")


def cond(s: dict[str, Any], kind: str) -> str:
    return str(next(c["status"] for c in s["conditions"] if c["type"] == kind))


def test_new_pod_is_pending_and_creating() -> None:
    s = compute_pod_status(make_pod(), PodObservation(), NOW)
    assert s["phase"] == "Pending"
    assert s["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert "podIP" not in s and s["qosClass"] == "BestEffort"


def test_containers_of_a_pod_with_init_containers_wait_pod_initializing() -> None:
    """As the kubelet's default waiting state: PodInitializing for every
    container not made yet in a pod with init containers (what kubectl
    shows after Init:N/M), ContainerCreating without; a reason the sync
    gave is kept."""
    s = status(make_pod(init=True), done("i", 0), waiting={"b": Waiting("ErrImagePull", "x")})
    assert s["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert s["containerStatuses"][1]["state"]["waiting"]["reason"] == "ErrImagePull"
    s = compute_pod_status(make_pod(init=True), PodObservation(), NOW)
    assert s["initContainerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}


def test_running_and_ready() -> None:
    s = status(
        make_pod(), run("a"), run("b"), ready=frozenset({"a", "b"}), started=frozenset({"a", "b"})
    )
    assert s["phase"] == "Running" and s["podIP"] == "10.244.0.9" and s["hostIP"] == "192.0.2.1"
    assert cond(s, "Ready") == "True" and cond(s, "ContainersReady") == "True"
    a = s["containerStatuses"][0]
    assert (
        a["ready"]
        and a["started"]
        and a["containerID"] == "skiff://a0"
        and a["imageID"] == "sha256:x"
    )
    assert "running" in a["state"]


def test_not_ready_until_readiness() -> None:
    s = status(make_pod(), run("a"), run("b"), ready=frozenset({"a"}))
    assert s["phase"] == "Running" and cond(s, "Ready") == "False"


def test_crashloop_shows_waiting_with_last_state() -> None:
    s = status(
        make_pod(),
        done("a", 1, attempt=3),
        run("b"),
        waiting={"a": Waiting("CrashLoopBackOff", "back-off 40s restarting failed container")},
    )
    a = s["containerStatuses"][0]
    assert a["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert (
        a["lastState"]["terminated"]["exitCode"] == 1
        and a["lastState"]["terminated"]["reason"] == "Error"
    )
    assert a["restartCount"] == 3
    assert s["phase"] == "Running"


def test_oomkilled_reason_kept() -> None:
    s = status(make_pod(policy="Never"), done("a", 137, reason="OOMKilled"), done("b", 0))
    assert s["containerStatuses"][0]["state"]["terminated"]["reason"] == "OOMKilled"
    assert s["containerStatuses"][1]["state"]["terminated"]["reason"] == "Completed"
    assert s["phase"] == "Failed"


@pytest.mark.parametrize(
    ("policy", "codes", "phase"),
    [
        ("Never", (0, 0), "Succeeded"),
        ("Never", (0, 1), "Failed"),
        ("OnFailure", (0, 0), "Succeeded"),
        ("OnFailure", (0, 2), "Running"),
        ("Always", (0, 0), "Running"),
    ],
)
def test_phase_of_finished_pods(policy: str, codes: tuple[int, int], phase: str) -> None:
    s = status(make_pod(policy), done("a", codes[0]), done("b", codes[1]))
    assert s["phase"] == phase


def test_init_containers_gate_phase() -> None:
    s = status(make_pod(init=True), run("i"))
    assert s["phase"] == "Pending" and cond(s, "Initialized") == "False"
    s = status(make_pod(init=True), done("i", 0), run("a"), run("b"))
    assert s["phase"] == "Running" and cond(s, "Initialized") == "True"
    assert s["initContainerStatuses"][0]["ready"]
    s = compute_pod_status(
        make_pod(policy="Never", init=True),
        PodObservation(containers=(done("i", 1),)),
        NOW,
        init_failed=True,
    )
    assert s["phase"] == "Failed"


def test_image_pull_error_is_pending() -> None:
    s = status(make_pod(), run("b"), waiting={"a": Waiting("ErrImagePull", "manifest unknown")})
    assert s["phase"] == "Pending"
    assert s["containerStatuses"][0]["state"] == {
        "waiting": {"reason": "ErrImagePull", "message": "manifest unknown"}
    }


def test_transition_time_kept_when_unchanged() -> None:
    pod = make_pod()
    pod["status"] = {
        "conditions": [
            {"type": "Ready", "status": "False", "lastTransitionTime": "2020-01-01T00:00:00Z"}
        ],
        "startTime": "2020-01-01T00:00:00Z",
    }
    s = status(pod, run("a"))
    ready = next(c for c in s["conditions"] if c["type"] == "Ready")
    assert ready["lastTransitionTime"] == "2020-01-01T00:00:00Z"
    assert s["startTime"] == "2020-01-01T00:00:00Z"


def sidecar_pod(policy: str = "Always") -> dict[str, Any]:
    pod = make_pod(policy)
    pod["spec"]["initContainers"] = [{"name": "s", "image": "busybox", "restartPolicy": "Always"}]
    return pod


def test_a_started_sidecar_initializes_the_pod_and_its_readiness_counts() -> None:
    s = status(sidecar_pod(), run("s"), started=frozenset())
    assert s["phase"] == "Pending" and cond(s, "Initialized") == "False"
    assert s["initContainerStatuses"][0]["started"] is False
    everyone = frozenset({"s", "a", "b"})
    s = status(sidecar_pod(), run("s"), run("a"), run("b"), started=everyone,
               ready=frozenset({"a", "b"}))  # fmt: skip
    assert s["phase"] == "Running" and cond(s, "Initialized") == "True"
    assert s["initContainerStatuses"][0]["started"] is True
    assert cond(s, "Ready") == "False"
    ready = next(c for c in s["conditions"] if c["type"] == "Ready")
    assert ready["message"] == "containers with unready status: [s]"
    s = status(sidecar_pod(), run("s"), run("a"), run("b"), started=everyone, ready=everyone)
    assert cond(s, "Ready") == "True" and s["initContainerStatuses"][0]["ready"] is True


def test_a_job_pod_succeeds_by_its_app_containers_whatever_its_sidecar() -> None:
    s = status(sidecar_pod("Never"), done("s", 137), done("a", 0), done("b", 0))
    assert s["phase"] == "Succeeded" and cond(s, "Initialized") == "True"
    s = status(sidecar_pod("Never"), run("s"), done("a", 0), done("b", 1), started=frozenset("s"))
    assert s["phase"] == "Failed"
