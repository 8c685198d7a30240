from typing import Any

import pytest

from agent.pod_actions import (
    ContainerState,
    PodRuntimeState,
    SandboxState,
    compute_pod_actions,
    container_hash,
)

WEB = {"name": "web", "image": "busybox"}
SIDE = {"name": "side", "image": "busybox", "command": ["sleep", "1d"]}
INIT1 = {"name": "init1", "image": "busybox"}
INIT2 = {"name": "init2", "image": "busybox"}


def pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = (), policy: str = "Always"):
    return {
        "spec": {
            "restartPolicy": policy,
            "containers": list(containers),
            "initContainers": list(init),
        }
    }


READY = SandboxState(id="sb1", ready=True, attempt=0)
NOT_READY = SandboxState(id="sb1", ready=False, attempt=2)


def running(c: dict[str, Any], cid: str = "") -> ContainerState:
    return ContainerState(
        id=cid or c["name"] + "-id", name=c["name"], state="running", hash=container_hash(c)
    )


def exited(c: dict[str, Any], code: int, cid: str = "") -> ContainerState:
    return ContainerState(
        id=cid or c["name"] + "-id",
        name=c["name"],
        state="exited",
        exit_code=code,
        hash=container_hash(c),
    )


def test_new_pod_creates_sandbox_and_starts_all() -> None:
    a = compute_pod_actions(pod(WEB, SIDE), PodRuntimeState())
    assert (a.create_sandbox, a.kill_pod, a.attempt) == (True, False, 0)
    assert a.containers_to_start == ["web", "side"]


def test_new_pod_with_init_starts_only_first_init() -> None:
    a = compute_pod_actions(pod(WEB, init=(INIT1, INIT2)), PodRuntimeState())
    assert a.create_sandbox and a.next_init_container == "init1" and not a.containers_to_start


def test_dead_sandbox_is_recreated_with_next_attempt() -> None:
    a = compute_pod_actions(pod(WEB), PodRuntimeState((NOT_READY,), (running(WEB),)))
    assert a.kill_pod and a.create_sandbox and a.attempt == 3
    assert a.containers_to_start == ["web"]


@pytest.mark.parametrize(
    ("policy", "code", "recreate"),
    [
        ("Never", 0, False),
        ("Never", 1, False),
        ("OnFailure", 0, False),
        ("OnFailure", 1, True),
        ("Always", 0, True),
    ],
)
def test_dead_sandbox_of_finished_pod(policy: str, code: int, recreate: bool) -> None:
    a = compute_pod_actions(
        pod(WEB, policy=policy), PodRuntimeState((NOT_READY,), (exited(WEB, code),))
    )
    assert a.kill_pod
    assert a.create_sandbox is recreate


def test_init_containers_run_in_order() -> None:
    p = pod(WEB, init=(INIT1, INIT2))
    a = compute_pod_actions(p, PodRuntimeState((READY,), (running(INIT1),)))
    assert a.next_init_container is None and not a.containers_to_start and not a.kill_pod
    a = compute_pod_actions(p, PodRuntimeState((READY,), (exited(INIT1, 0),)))
    assert a.next_init_container == "init2"
    a = compute_pod_actions(p, PodRuntimeState((READY,), (exited(INIT2, 0), exited(INIT1, 0))))
    assert a.next_init_container is None and a.containers_to_start == ["web"]


@pytest.mark.parametrize(
    ("policy", "failed_for_good"), [("Never", True), ("OnFailure", False), ("Always", False)]
)
def test_failed_init_container(policy: str, failed_for_good: bool) -> None:
    a = compute_pod_actions(
        pod(WEB, init=(INIT1,), policy=policy), PodRuntimeState((READY,), (exited(INIT1, 2),))
    )
    assert a.init_failed is failed_for_good
    assert a.next_init_container == (None if failed_for_good else "init1")


@pytest.mark.parametrize(
    ("policy", "code", "restart"),
    [
        ("Always", 0, True),
        ("Always", 1, True),
        ("OnFailure", 0, False),
        ("OnFailure", 137, True),
        ("Never", 1, False),
    ],
)
def test_exited_container_restart_policy(policy: str, code: int, restart: bool) -> None:
    a = compute_pod_actions(
        pod(WEB, SIDE, policy=policy), PodRuntimeState((READY,), (running(SIDE), exited(WEB, code)))
    )
    assert a.containers_to_start == (["web"] if restart else [])
    assert not a.kill_pod


def test_running_and_unchanged_is_kept() -> None:
    a = compute_pod_actions(pod(WEB), PodRuntimeState((READY,), (running(WEB),)))
    assert not (a.kill_pod or a.create_sandbox or a.containers_to_start or a.containers_to_kill)


def test_changed_spec_restarts_container() -> None:
    changed = {**WEB, "image": "busybox:2"}
    a = compute_pod_actions(pod(changed), PodRuntimeState((READY,), (running(WEB),)))
    assert a.containers_to_kill == {"web-id": "container web definition changed"}
    assert a.containers_to_start == ["web"]


@pytest.mark.parametrize(
    ("policy", "restart"), [("Always", True), ("OnFailure", True), ("Never", False)]
)
def test_liveness_failure(policy: str, restart: bool) -> None:
    a = compute_pod_actions(
        pod(WEB, SIDE, policy=policy),
        PodRuntimeState((READY,), (running(WEB), running(SIDE))),
        liveness_failed=frozenset({"web"}),
    )
    assert a.containers_to_kill == {"web-id": "container web failed liveness probe"}
    assert a.containers_to_start == (["web"] if restart else [])


def test_container_not_in_spec_is_killed() -> None:
    a = compute_pod_actions(
        pod(WEB), PodRuntimeState((READY,), (running(WEB), running(SIDE, "old")))
    )
    assert a.containers_to_kill == {"old": "container side is not in the pod spec"}


def test_all_done_releases_sandbox() -> None:
    a = compute_pod_actions(pod(WEB, policy="Never"), PodRuntimeState((READY,), (exited(WEB, 0),)))
    assert a.kill_pod and not a.create_sandbox


def test_created_but_never_started_is_replaced() -> None:
    st = ContainerState(id="c1", name="web", state="created", hash=container_hash(WEB))
    a = compute_pod_actions(pod(WEB), PodRuntimeState((READY,), (st,)))
    assert a.containers_to_kill == {"c1": "container web was never started"}
    assert a.containers_to_start == ["web"]


def test_hash_ignores_resources_and_probes() -> None:
    a = {
        **WEB,
        "resources": {"limits": {"cpu": "1"}},
        "livenessProbe": {"exec": {"command": ["true"]}},
    }
    assert container_hash(a) == container_hash(WEB)
    assert container_hash({**WEB, "env": [{"name": "A", "value": "1"}]}) != container_hash(WEB)


# Native sidecars: init containers with restartPolicy Always.
SIDECAR = {"name": "proxy", "image": "busybox", "restartPolicy": "Always"}
PROBED = {**SIDECAR, "startupProbe": {"exec": {"command": ["true"]}}}


def test_sidecar_started_lets_the_next_init_container_start() -> None:
    p = pod(WEB, init=(SIDECAR, INIT1))
    a = compute_pod_actions(p, PodRuntimeState((READY,), (running(SIDECAR),)))
    assert a.init_containers_to_start == ["init1"] and not a.containers_to_start


def test_sidecar_last_in_init_lets_the_app_start_while_it_runs() -> None:
    p = pod(WEB, init=(INIT1, SIDECAR))
    a = compute_pod_actions(p, PodRuntimeState((READY,), (running(SIDECAR), exited(INIT1, 0))))
    assert a.init_containers_to_start == [] and a.containers_to_start == ["web"]
    assert not a.kill_pod


def test_sidecar_with_startup_probe_holds_the_sequence_until_started() -> None:
    p = pod(WEB, init=(PROBED, INIT1))
    st = PodRuntimeState((READY,), (running(PROBED),))
    a = compute_pod_actions(p, st, started=frozenset())
    assert a.init_containers_to_start == [] and not a.containers_to_start
    a = compute_pod_actions(p, st, started=frozenset({"proxy"}))
    assert a.init_containers_to_start == ["init1"]
    failed = compute_pod_actions(p, st, liveness_failed=frozenset({"proxy"}), started=frozenset())
    assert failed.init_containers_to_start == ["proxy"]
    assert "failed startup probe" in failed.containers_to_kill["proxy-id"]


@pytest.mark.parametrize("policy", ["Never", "OnFailure", "Always"])
def test_sidecar_restarts_on_exit_whatever_the_pod_policy(policy: str) -> None:
    p = pod(WEB, init=(SIDECAR,), policy=policy)
    a = compute_pod_actions(p, PodRuntimeState((READY,), (exited(SIDECAR, 0), running(WEB))))
    assert a.init_containers_to_start == ["proxy"] and not a.kill_pod
    assert not a.containers_to_start


def test_sidecar_failed_liveness_or_changed_spec_restarts_it() -> None:
    p = pod(WEB, init=(SIDECAR,))
    st = PodRuntimeState((READY,), (running(SIDECAR), running(WEB)))
    a = compute_pod_actions(p, st, liveness_failed=frozenset({"proxy"}))
    assert (
        a.init_containers_to_start == ["proxy"] and "liveness" in a.containers_to_kill["proxy-id"]
    )
    changed = pod(WEB, init=({**SIDECAR, "image": "busybox:2"},))
    a = compute_pod_actions(changed, st)
    assert a.init_containers_to_start == ["proxy"] and "changed" in a.containers_to_kill["proxy-id"]


def test_job_pod_ends_when_its_app_exits_while_the_sidecar_runs() -> None:
    p = pod(WEB, init=(SIDECAR,), policy="Never")
    a = compute_pod_actions(p, PodRuntimeState((READY,), (running(SIDECAR), exited(WEB, 0))))
    assert a.kill_pod and a.init_containers_to_start == [] and not a.containers_to_start


def test_regular_init_after_sidecar_is_not_rerun_once_initialized() -> None:
    p = pod(WEB, init=(SIDECAR, INIT1))
    st = PodRuntimeState((READY,), (running(SIDECAR), exited(INIT1, 0), running(WEB)))
    a = compute_pod_actions(p, st)
    assert a.init_containers_to_start == [] and not a.containers_to_start and not a.kill_pod


def test_ephemeral_containers_start_once_and_are_never_restarted() -> None:
    p = pod(WEB, init=(INIT1,))
    p["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "busybox"}]
    a = compute_pod_actions(p, PodRuntimeState((READY,), (running(INIT1),)))
    assert a.ephemeral_to_start == ["debugger"]  # even while the pod initializes
    dbg = {"name": "debugger", "image": "busybox"}
    a = compute_pod_actions(
        p, PodRuntimeState((READY,), (exited(dbg, 1), exited(INIT1, 0), running(WEB)))
    )
    assert a.ephemeral_to_start == [] and not a.containers_to_kill and not a.kill_pod
    a = compute_pod_actions(
        p, PodRuntimeState((READY,), (running(dbg), exited(INIT1, 0), running(WEB)))
    )
    assert not a.containers_to_kill  # a running ephemeral container is not a stray
