"""A Volcano Job's state machine, as Volcano's job controller has it (controllers/job/state).

Each sync runs one action on the job's state (the action a policy or a
Command chose, else Sync): `act` says which pods to kill and, for an action
that moves the job on at once, its next phase; then `settle` (each state's
status function) reads the pod counts, the pods being killed counted as
terminating, and may move it on. Pure: no client, no clock.

- Pending, Running: RestartJob kills every pod (keeping Succeeded and Failed
  ones on the last retry, so the failure can be read) and RestartTask or
  RestartPod its target, both counting a retry -> Restarting; AbortJob,
  TerminateJob, CompleteJob kill the live pods -> Aborting, Terminating,
  Completing. Sync: Pending -> Running once minAvailable pods run or ran;
  Running -> Completed once minSuccess pods succeeded; when every pod ended
  -> Failed if a task has fewer successes than its minAvailable (where the
  job's minAvailable covers the tasks'), or fewer than minSuccess, else
  Completed with minAvailable successes, else Failed; -> Pending when more
  pods are pending than the job can spare.
- Restarting: Failed once the retries reach maxRetry, else Pending once the
  pods left that are not terminating can make minAvailable.
- Aborting, Completing, Terminating: Aborted, Completed, Terminated once no
  pod is pending, running or terminating; ResumeJob from Aborting or
  Aborted -> Restarting (a retry).
- Completed, Failed, Terminated, Aborted: live pods are killed, nothing more.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controlplane.api import volcano
from controlplane.controllers import podutil

Object = dict[str, Any]
ALIVE = ("Pending", "Running", "Unknown")
SOFT = frozenset(("Succeeded", "Failed"))  # Volcano's PodRetainPhaseSoft
NONE: frozenset[str] = frozenset()  # PodRetainPhaseNone
KILLING = {"Aborting": "Aborted", "Completing": "Completed", "Terminating": "Terminated"}
ACTION_PHASE = {"AbortJob": "Aborting", "CompleteJob": "Completing", "TerminateJob": "Terminating"}
DEFAULT_MAX_RETRY = 3


@dataclass(frozen=True)
class Step:
    phase: str
    version: int
    retries: int
    kill: tuple[Object, ...]  # pods to delete now
    settle: bool  # whether the state's status function still applies this sync


def _phase(pod: Mapping[str, Any]) -> str:
    return str(podutil.status(pod).get("phase") or "Pending")


def _kill_all(pods: Sequence[Object], retain: frozenset[str]) -> tuple[Object, ...]:
    return tuple(p for p in pods if not podutil.is_deleting(p) and _phase(p) not in retain)


def _target(pods: Sequence[Object], action: str, target: str) -> tuple[Object, ...]:
    if action == "RestartTask":
        hit = [p for p in pods if podutil.annotations_of(p).get(volcano.TASK_SPEC) == target]
    else:
        hit = [p for p in pods if podutil.name_of(p) == target]
    return tuple(p for p in hit if not podutil.is_deleting(p))


def max_retry(job: Mapping[str, Any]) -> int:
    value = podutil.spec(job).get("maxRetry")
    return DEFAULT_MAX_RETRY if value is None else int(value)


def act(
    job: Mapping[str, Any], phase: str, action: str, target: str, pods: Sequence[Object],
    version: int, retries: int,
) -> Step:  # fmt: skip
    """What `action` does in `phase` (Volcano's <state>.Execute)."""
    if phase in ("Pending", "Running"):
        if action == "RestartJob":
            last = retries >= max_retry(job) - 1  # keep the failure to read on the last retry
            kill = _kill_all(pods, SOFT if last else NONE)
            return Step("Restarting", version + 1, retries + 1, kill, False)
        if action in ("RestartTask", "RestartPod"):
            return Step("Restarting", version, retries + 1, _target(pods, action, target), False)
        if action in ACTION_PHASE:
            return Step(ACTION_PHASE[action], version + 1, retries, _kill_all(pods, SOFT), False)
        return Step(phase, version, retries, (), True)
    if phase == "Restarting":
        if action in ("RestartTask", "RestartPod"):
            kill = _target(pods, action, target)
        elif action and action != "ResumeJob":
            kill = _kill_all(pods, NONE)
        else:
            kill = ()
        return Step(phase, version, retries, kill, True)
    if phase in ("Aborting", "Aborted") and action == "ResumeJob":
        return Step("Restarting", version + 1, retries + 1, _kill_all(pods, SOFT), False)
    # Aborting, Completing, Terminating settle once the pods are gone; the
    # finished phases only kill what still lives.
    return Step(phase, version, retries, _kill_all(pods, SOFT), phase in KILLING)


def counts(pods: Sequence[Object], killed: Sequence[Object]) -> dict[str, int]:
    """Pods by phase as the status counts them: the killed and those being
    deleted are terminating."""
    gone = {podutil.uid_of(p) for p in killed}
    c = dict.fromkeys(("pending", "running", "succeeded", "failed", "terminating", "unknown"), 0)
    for p in pods:
        if podutil.is_deleting(p) or podutil.uid_of(p) in gone:
            c["terminating"] += 1
            continue
        phase = _phase(p).lower()
        c[phase if phase in c else "unknown"] += 1
    return c


def _tasks(job: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [t for t in podutil.spec(job).get("tasks") or [] if isinstance(t, Mapping)]


def total_tasks(job: Mapping[str, Any]) -> int:
    return sum(int(t.get("replicas") or 0) for t in _tasks(job))


def _succeeded_per_task(pods: Sequence[Object], killed: Sequence[Object]) -> dict[str, int]:
    gone = {podutil.uid_of(p) for p in killed}
    out: dict[str, int] = {}
    for p in pods:
        if _phase(p) == "Succeeded" and podutil.uid_of(p) not in gone:
            t = podutil.annotations_of(p).get(volcano.TASK_SPEC, "")
            out[t] = out.get(t, 0) + 1
    return out


def settle(
    job: Mapping[str, Any], phase: str, c: Mapping[str, int], retries: int,
    pods: Sequence[Object], killed: Sequence[Object],
) -> str:  # fmt: skip
    """The state's status function (Volcano's UpdateStatusFn of each state)."""
    spec = podutil.spec(job)
    min_available = int(spec.get("minAvailable") or 0)
    total = total_tasks(job)
    if phase == "Pending":
        ran = c["running"] + c["succeeded"] + c["failed"]
        return "Running" if ran >= min_available and ran > 0 else phase
    if phase == "Running":
        return _running(job, c, pods, killed)
    if phase == "Restarting":
        if retries >= max_retry(job):
            return "Failed"
        return "Pending" if total - c["terminating"] >= min_available else phase
    if phase in KILLING:
        alive = c["terminating"] + c["pending"] + c["running"]
        return KILLING[phase] if not alive else phase
    return phase


def _running(
    job: Mapping[str, Any], c: Mapping[str, int], pods: Sequence[Object], killed: Sequence[Object]
) -> str:
    spec = podutil.spec(job)
    min_available = int(spec.get("minAvailable") or 0)
    total = total_tasks(job)
    if total == 0:
        return "Running"  # scaled down to nothing: the phase stays
    min_success = spec.get("minSuccess")
    if min_success is not None and c["succeeded"] >= int(min_success):
        return "Completed"
    if c["succeeded"] + c["failed"] >= total:
        tasks = _tasks(job)
        task_min = sum(int(t.get("minAvailable", t.get("replicas") or 0)) for t in tasks)
        if min_available >= task_min:
            done = _succeeded_per_task(pods, killed)
            for t in tasks:
                need = t.get("minAvailable")
                if need is not None and done.get(str(t.get("name")), 0) < int(need):
                    return "Failed"
        if min_success is not None and c["succeeded"] < int(min_success):
            return "Failed"
        return "Completed" if c["succeeded"] >= min_available else "Failed"
    if c["pending"] > total - min_available:
        return "Pending"
    return "Running"
