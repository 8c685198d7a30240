"""A Volcano Job's state machine (vcjob_state.py), case by case against
Volcano's controllers/job/state."""

from __future__ import annotations

from typing import Any

from controlplane.api import volcano
from controlplane.controllers.vcjob_policy import PodEvent, action_for
from controlplane.controllers.vcjob_state import act, counts, settle

Obj = dict[str, Any]


def _job(**spec: Any) -> Obj:
    tasks = spec.pop("tasks", [{"name": "t", "replicas": 2}])
    return {"metadata": {"name": "j", "uid": "u"}, "spec": {"minAvailable": 2, "tasks": tasks,
                                                          **spec}}  # fmt: skip


def _pod(name: str, phase: str, task: str = "t", deleting: bool = False) -> Obj:
    meta: Obj = {"name": name, "uid": name, "annotations": {volcano.TASK_SPEC: task}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase}}


def test_restart_job_counts_a_retry_and_kills_everything_but_on_the_last_retry() -> None:
    job = _job(maxRetry=2)
    pods = [_pod("a", "Running"), _pod("b", "Failed")]
    step = act(job, "Running", "RestartJob", "", pods, 0, 0)
    assert (step.phase, step.version, step.retries) == ("Restarting", 1, 1)
    assert {p["metadata"]["name"] for p in step.kill} == {"a", "b"}
    last = act(job, "Running", "RestartJob", "", pods, 1, 1)  # retryCount 1 >= maxRetry - 1
    assert {p["metadata"]["name"] for p in last.kill} == {"a"}  # the failed pod is kept
    assert settle(job, "Restarting", counts(pods, last.kill), last.retries, pods, last.kill) == (
        "Failed"
    )


def test_restarting_is_pending_again_once_enough_pods_are_not_terminating() -> None:
    job = _job()
    going = [_pod("a", "Running", deleting=True), _pod("b", "Running")]
    assert settle(job, "Restarting", counts(going, []), 1, going, []) == "Restarting"
    assert settle(job, "Restarting", counts([], []), 1, [], []) == "Pending"


def test_restart_pod_kills_its_target_alone() -> None:
    pods = [_pod("j-t-0", "Failed"), _pod("j-t-1", "Running")]
    step = act(_job(), "Running", "RestartPod", "j-t-0", pods, 0, 0)
    assert step.phase == "Restarting" and [p["metadata"]["name"] for p in step.kill] == ["j-t-0"]
    assert step.version == 0 and step.retries == 1


def test_min_success_completes_a_running_job() -> None:
    job = _job(
        minSuccess=2, tasks=[{"name": "short", "replicas": 3}, {"name": "log", "replicas": 2}]
    )
    pods = [_pod("s0", "Succeeded", "short"), _pod("s1", "Succeeded", "short"),
            _pod("s2", "Running", "short"), _pod("l0", "Running", "log")]  # fmt: skip
    assert settle(job, "Running", counts(pods, []), 0, pods, []) == "Completed"


def test_a_task_short_of_its_minimum_fails_the_job_when_all_ended() -> None:
    job = _job(minAvailable=2, tasks=[{"name": "a", "replicas": 1, "minAvailable": 1},
                                      {"name": "b", "replicas": 1, "minAvailable": 1}])  # fmt: skip
    pods = [_pod("a0", "Succeeded", "a"), _pod("b0", "Failed", "b")]
    assert settle(job, "Running", counts(pods, []), 0, pods, []) == "Failed"


def test_aborted_resumes_through_restarting() -> None:
    step = act(_job(), "Aborted", "ResumeJob", "", [], 3, 0)
    assert (step.phase, step.retries) == ("Restarting", 1)


def test_policies_match_exit_codes_task_first_and_any_event() -> None:
    job = _job(
        policies=[{"exitCode": 3, "action": "RestartJob"}, {"event": "PodEvicted",
                                                             "action": "AbortJob"}],
        tasks=[{"name": "t", "replicas": 2, "policies": [{"event": "PodFailed",
                                                          "action": "RestartTask"}]}],
    )  # fmt: skip
    assert action_for(job, PodEvent("PodFailed", "t", "p", 3)) == ("RestartTask", "t")
    assert action_for(job, PodEvent("PodFailed", "other", "p", 3)) == ("RestartJob", "")
    assert action_for(job, PodEvent("PodFailed", "other", "p", 1)) == ("", "")
    assert action_for(job, PodEvent("PodEvicted", "t", "p")) == ("AbortJob", "")
    anyone = _job(policies=[{"event": "*", "action": "RestartPod"}])
    assert action_for(anyone, PodEvent("TaskFailed", "t", "p")) == ("RestartPod", "p")
    assert action_for(anyone, PodEvent("PodPending", "t", "p")) == ("", "")  # needs a timeout
