"""Volcano's own e2e Job-lifecycle and queue cases (test/e2e/jobseq, jobp,
schedulingbase), ported: a real control plane with Volcano's CI scheduler
configuration and hollow nodes (volcano_e2e.py). What the containers would
do (fail with an exit code, restart, succeed), a test writes into the
pod's status, as the agent would. Each test names the upstream case it
comes from; each failed on skiff before issue 35.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controlplane.api import volcano
from controlplane.client.errors import Invalid, NotFound
from controlplane.client.interface import DeleteOptions
from tests.harness.wait import wait_for

from .volcano_e2e import (
    NS,
    Cluster,
    Task,
    cleanup,
    create,
    events,
    group_of,
    job,
    phase,
    pods_of,
    running,
    set_pod_status,
    start,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from start(tmp_path_factory.mktemp("vcjobs"))


@pytest.fixture
def c(cluster: Cluster) -> Iterator[Cluster]:
    try:
        yield cluster
    finally:
        cleanup(cluster)


def _pod(c: Cluster, job_name: str, task: str, index: int = 0) -> str:
    """The pod name Volcano's Job controller gives a task replica."""
    return f"{job_name}-{task}-{index}"


def test_exit_code_policy_restarts_the_job(c: Cluster) -> None:
    """jobseq/job_error_handling.go "job level LifecyclePolicy, error code: 3;
    Action: RestartJob": the failing pod exits 3; the job goes Pending ->
    Running -> Restarting, with an ExecuteAction Event naming RestartJob."""
    create(c, job("errorcode-restart-job", [
        Task("success", 1, min=1), Task("fail", 1, min=1, restart_policy="Never"),
    ], policies=[{"action": "RestartJob", "exitCode": 3}]))  # fmt: skip
    wait_for(lambda: phase(c.api, "errorcode-restart-job") == "Running", timeout=60)
    set_pod_status(c.api, _pod(c, "errorcode-restart-job", "fail"), "Failed", exit_code=3)
    c.phases.wait(c.api, "errorcode-restart-job", ["Pending", "Running", "Restarting"])
    (event, *_) = wait_for(lambda: events(c.api, "Job", "errorcode-restart-job", "ExecuteAction"))
    assert event["message"] == "Start to execute action RestartJob "


def test_task_failed_terminates_the_job(c: Cluster) -> None:
    """jobseq/job_error_handling.go "job level LifecyclePolicy, Event:
    TaskFailed; Action: TerminateJob": a pod of a task with maxRetry 3
    reports 4 restarts: the task failed, the job Terminating -> Terminated."""
    create(c, job("task-failed-terminate-job", [
        Task("success", 2, min=2),
        Task("failed", 2, min=2, restart_policy="Never", max_retry=3),
    ], policies=[{"action": "TerminateJob", "event": "TaskFailed"}]))  # fmt: skip
    c.phases.wait(c.api, "task-failed-terminate-job", ["Pending", "Running"])
    set_pod_status(c.api, _pod(c, "task-failed-terminate-job", "failed"), "Running", restarts=4)
    c.phases.wait(c.api, "task-failed-terminate-job", ["Terminating", "Terminated"])


def test_restart_pod_goes_through_restarting(c: Cluster) -> None:
    """jobseq/job_error_handling.go "job level LifecyclePolicy, Event:
    PodFailed, Action: RestartPod; ...": the failed pod alone is restarted,
    the job going Pending -> Running -> Restarting -> Running."""
    create(c, job("failed-restart-job", [
        Task("success", 2, min=2), Task("fail", 1, min=1, restart_policy="Never"),
    ], policies=[
        {"action": "RestartPod", "event": "PodFailed"},
        {"action": "TerminateJob", "event": "PodEvicted", "timeout": "5m"},
    ]))  # fmt: skip
    c.phases.wait(c.api, "failed-restart-job", ["Pending", "Running"])
    set_pod_status(c.api, _pod(c, "failed-restart-job", "fail"), "Failed", exit_code=1)
    c.phases.wait(c.api, "failed-restart-job", ["Pending", "Running", "Restarting", "Running"])
    assert c.api.get(volcano.JOB_KEY, "failed-restart-job", NS)["status"]["retryCount"] == 1


def test_min_success_completes_the_job(c: Cluster) -> None:
    """jobp/min_success.go "Min Success": minSuccess 2; once two short tasks
    succeeded, the job is Completed although its long tasks still run."""
    create(c, job("min-success-job", [Task("short", 3, min=1), Task("log", 2, min=1)],
                  min_success=2))  # fmt: skip
    wait_for(lambda: phase(c.api, "min-success-job") == "Running", timeout=60)
    for i in range(2):
        set_pod_status(c.api, _pod(c, "min-success-job", "short", i), "Succeeded", exit_code=0)
    wait_for(lambda: phase(c.api, "min-success-job") == "Completed", timeout=60,
             message="Completed at minSuccess")  # fmt: skip


def test_the_failed_pod_is_kept_on_the_last_retry(c: Cluster) -> None:
    """jobp/job_restart.go "Retain failed pod on last Retry": maxRetry 2,
    PodFailed -> RestartJob; the failing task fails each time: the job ends
    Failed with retryCount 2, the running pod deleted and the failed one kept."""
    name = "last-retry-job"
    create(c, job(name, [
        Task("running-task", 1, min=1, restart_policy="Never", max_retry=1),
        Task("failed-task", 1, min=1, restart_policy="Never", max_retry=1),
    ], min_available=2, min_success=2, max_retry=2, policies=[
        {"event": "PodEvicted", "action": "RestartJob"},
        {"event": "PodFailed", "action": "RestartJob"},
    ]))  # fmt: skip
    failed = _pod(c, name, "failed-task")

    def fail_when_running() -> bool:
        if phase(c.api, name) == "Failed":
            return True
        try:
            pod = c.api.get("Pod", failed, NS)
        except NotFound:
            return False
        st = pod.get("status") or {}
        if st.get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp"):
            set_pod_status(c.api, failed, "Failed", exit_code=1)
        return False

    wait_for(fail_when_running, timeout=120, interval=0.2, message="the job Failed")
    assert c.api.get(volcano.JOB_KEY, name, NS)["status"]["retryCount"] == 2
    wait_for(lambda: not pods_of(c.api, name, "running-task"), timeout=30,
             message="the running pod deleted")  # fmt: skip
    kept = c.api.get("Pod", failed, NS)
    assert kept["status"]["phase"] == "Failed" and not kept["metadata"].get("deletionTimestamp")


def test_terminate_action_event(c: Cluster) -> None:
    """jobp/job_lifecycle.go "Checking Event Generation for job": PodFailed ->
    TerminateJob is recorded as an ExecuteAction Event naming TerminateJob."""
    create(c, job("terminate-job", [Task("complete", 1, min=1, restart_policy="Never")],
                  policies=[{"action": "TerminateJob", "event": "PodFailed"}]))  # fmt: skip
    wait_for(lambda: running(c.api, "terminate-job") == 1, timeout=60)
    set_pod_status(c.api, _pod(c, "terminate-job", "complete"), "Failed", exit_code=127)
    wait_for(lambda: any("TerminateJob" in str(e["message"])
                         for e in events(c.api, "Job", "terminate-job", "ExecuteAction")),
             timeout=30, message="ExecuteAction TerminateJob")  # fmt: skip


def test_podgroup_of_a_failed_job_is_completed(c: Cluster) -> None:
    """schedulingbase/job_scheduling.go "PodGroup's Phase should be Completed
    when Job fails": every pod failed; the PodGroup is Completed."""
    create(c, job("fail-job", [Task("t", 2, min=2, restart_policy="Never")]))
    wait_for(lambda: running(c.api, "fail-job") == 2, timeout=60)
    for i in range(2):
        set_pod_status(c.api, _pod(c, "fail-job", "t", i), "Failed", exit_code=1)
    wait_for(lambda: group_of(c.api, "fail-job").get("status", {}).get("phase") == "Completed",
             timeout=30, message="PodGroup Completed")  # fmt: skip
    assert phase(c.api, "fail-job") == "Failed"


def _taint_all(c: Cluster, taints: list[dict[str, str]]) -> None:
    for node in c.api.list("Node").items:
        c.api.patch("Node", node["metadata"]["name"], {"spec": {"taints": taints or None}})


@pytest.mark.parametrize(("action", "phases"), [
    ("RestartJob", ["Restarting", "Pending"]), ("AbortJob", ["Aborting", "Aborted"]),
])  # fmt: skip
def test_unschedulable_job_policy(c: Cluster, action: str, phases: list[str]) -> None:
    """jobseq/job_error_handling.go "Job error handling: Restart (Abort) job
    when job is unschedulable": a gang filling the cluster runs; every node
    is tainted and one pod deleted: its replacement cannot be placed, the
    PodGroup turns Unknown, and the Unknown (JobUnknown) policy fires."""
    from .volcano_e2e import SLOTS

    name = f"job-{action.lower()}-when-unschedulable"
    create(c, job(name, [Task("test", SLOTS, min=SLOTS)],
                  policies=[{"event": "Unknown", "action": action}]))  # fmt: skip
    wait_for(lambda: running(c.api, name) == SLOTS, timeout=60, message="the gang runs")
    taint = [{"key": "unschedulable-taint-key", "value": "unschedulable-taint-val",
              "effect": "NoSchedule"}]  # fmt: skip
    _taint_all(c, taint)
    try:
        c.api.delete("Pod", _pod(c, name, "test"), NS, DeleteOptions())
        c.phases.wait(c.api, name, phases, timeout=90)
    finally:
        _taint_all(c, [])
    if action == "RestartJob":
        c.phases.wait(c.api, name, ["Restarting", "Pending", "Running"], timeout=90)


def test_closing_a_parent_queue_closes_its_child(c: Cluster) -> None:
    """jobseq/queue.go "Queue Command Close And Open With Hierarchical Queues":
    closing queue1 closes its child queue11; opening queue11 while its parent
    is closed leaves it Closed; opening queue1 opens it again."""
    for name, parent in (("queue1", "root"), ("queue2", "root"), ("queue11", "queue1")):
        c.api.create("Queue", {"metadata": {"name": name}, "spec": {"weight": 1, "parent": parent}})

    def command(target: str, action: str) -> None:
        queue = {"kind": "Queue", **c.api.get("Queue", target)}
        c.api.create("Command", volcano.command_for(queue, action, NS), NS)

    def state(name: str) -> str:
        return str(c.api.get("Queue", name).get("status", {}).get("state"))

    try:
        command("queue1", "CloseQueue")
        wait_for(lambda: state("queue11") == "Closed", timeout=30, message="child closed")
        command("queue11", "OpenQueue")
        wait_for(lambda: events(c.api, "Queue", "queue11", "OpenQueue"), timeout=30)
        assert state("queue11") == "Closed"
        command("queue1", "OpenQueue")
        wait_for(lambda: state("queue1") == "Open" and state("queue11") == "Open", timeout=30,
                 message="parent and child open again")  # fmt: skip
    finally:
        for name in ("queue11", "queue2", "queue1"):
            c.api.delete("Queue", name)


def test_a_queue_deleted_in_the_foreground_goes(c: Cluster) -> None:
    """Issue 35's garbage collection: a Queue deleted with `propagationPolicy:
    Foreground` (kubectl delete --cascade=foreground) goes once the collector
    has released it; a parent with a child queue is refused, as Volcano's
    queue webhook does, until the child is gone."""
    c.api.create("Queue", {"metadata": {"name": "fg-parent"}, "spec": {"parent": "root"}})
    c.api.create("Queue", {"metadata": {"name": "fg-child"}, "spec": {"parent": "fg-parent"}})
    foreground = DeleteOptions(propagation_policy="Foreground")
    with pytest.raises(Invalid, match="queue fg-parent can not be deleted because it has 1 child"):
        c.api.delete("Queue", "fg-parent", options=foreground)
    for name in ("fg-child", "fg-parent"):
        c.api.delete("Queue", name, options=foreground)

        def gone(name: str = name) -> bool:
            try:
                c.api.get("Queue", name)
            except NotFound:
                return True
            return False

        wait_for(gone, timeout=30, message=f"queue {name} deleted in the foreground")
