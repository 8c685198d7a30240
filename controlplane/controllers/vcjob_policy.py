"""A Volcano Job's lifecycle policies: which action a pod's event leads to.

As Volcano's job controller (applyPolicies, and the events its pod and
PodGroup handlers raise): a pod that fails is PodFailed, with the exit code
of its first container; a pod deleted that the controller did not kill is
PodEvicted; a task whose Running and Pending pods restarted, in all, its
`maxRetry` times (3 when unset; -1: no limit) is TaskFailed; a task whose
every replica succeeded is TaskCompleted; the job's PodGroup turning
Unknown is Unknown (JobUnknown). Policies of the event's task come first,
then the job's; a policy matches by event (`event` or `events`, `*` for
any) or by `exitCode`. PodPending matches only a policy with a timeout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controlplane.api import volcano
from controlplane.controllers import podutil

Object = dict[str, Any]
TARGETED = ("RestartTask", "RestartPod")
DEFAULT_TASK_MAX_RETRY = 3


@dataclass(frozen=True)
class PodEvent:
    event: str
    task: str
    pod: str = ""
    exit_code: int | None = None


def exit_code(pod: Mapping[str, Any]) -> int | None:
    """The first container's exit code, if it terminated (Volcano reads only that one)."""
    statuses = podutil.status(pod).get("containerStatuses") or []
    first = statuses[0] if statuses and isinstance(statuses[0], Mapping) else {}
    terminated = (first.get("state") or {}).get("terminated") or {}
    code = terminated.get("exitCode")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def task_of(pod: Mapping[str, Any]) -> str:
    return str(podutil.annotations_of(pod).get(volcano.TASK_SPEC, ""))


def _task(job: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    for t in podutil.spec(job).get("tasks") or []:
        if isinstance(t, Mapping) and t.get("name") == name:
            return t
    return {}


def task_failed(job: Mapping[str, Any], task: str, pods: Sequence[Mapping[str, Any]]) -> bool:
    """The task's pods that run or wait restarted `maxRetry` times in all (jobCache.TaskFailed)."""
    spec = _task(job, task)
    replicas = int(spec.get("replicas") or 0)
    limit = int(spec.get("maxRetry") or 0) or DEFAULT_TASK_MAX_RETRY
    if not replicas or spec.get("maxRetry") == -1:
        return False
    restarts = 0
    for p in pods:
        if task_of(p) != task or podutil.status(p).get("phase") not in ("Running", "Pending"):
            continue
        for key in ("initContainerStatuses", "containerStatuses"):
            for st in podutil.status(p).get(key) or []:
                if isinstance(st, Mapping):
                    restarts += int(st.get("restartCount") or 0)
    return restarts >= limit


def task_completed(job: Mapping[str, Any], task: str, pods: Sequence[Mapping[str, Any]]) -> bool:
    replicas = int(_task(job, task).get("replicas") or 0)
    done = sum(
        1 for p in pods if task_of(p) == task and podutil.status(p).get("phase") == "Succeeded"
    )
    return replicas > 0 and done >= replicas


def _events(policy: Mapping[str, Any]) -> list[str]:
    names = [str(e) for e in policy.get("events") or []]
    if policy.get("event"):
        names.append(str(policy["event"]))
    return ["Unknown" if n == "JobUnknown" else n for n in names]


def _matches(policy: Mapping[str, Any], ev: PodEvent) -> bool:
    names = _events(policy)
    hit = bool(names) and (ev.event in names or "*" in names)
    if hit and (ev.event != "PodPending" or policy.get("timeout") is not None):
        return True
    code = policy.get("exitCode")
    return code is not None and ev.exit_code is not None and code == ev.exit_code


def action_for(job: Mapping[str, Any], ev: PodEvent) -> tuple[str, str]:
    """(action, target) for the event, or ("", "") when no policy takes it.
    The target is the task for RestartTask, the pod for RestartPod."""
    task_policies = _task(job, ev.task).get("policies") if ev.task else None
    for policies in (task_policies or [], podutil.spec(job).get("policies") or []):
        for policy in policies:
            if isinstance(policy, Mapping) and _matches(policy, ev):
                action = str(policy.get("action") or "")
                if action == "RestartTask":
                    return action, ev.task
                return action, ev.pod if action == "RestartPod" else ""
    return "", ""
