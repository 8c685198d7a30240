"""Volcano's batch kinds: the constants and defaults controllers, scheduler and kinds share.

Kinds (their modules: controlplane/api/kinds/volcano/):
`scheduling.volcano.sh/v1beta1` Queue (cluster-scoped) and PodGroup,
`batch.volcano.sh/v1alpha1` Job (key "Job.batch.volcano.sh"), and
`bus.volcano.sh/v1alpha1` Command (a user's one-shot order to the Job
or Queue controller: `action`, `target` (an ownerReference), `reason`,
`message`, top-level fields as Volcano has them; vcctl's job
suspend/resume and queue operate create them). Each kind's validation and
admission (Volcano's webhooks' rules) is its module's in
controlplane/api/kinds/volcano/. This module is pure data and functions;
it imports nothing of the server or the client.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

Object = dict[str, Any]

# Annotations and labels Volcano's controllers put on pods.
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
JOB_NAME = "volcano.sh/job-name"
JOB_NAMESPACE = "volcano.sh/job-namespace"
QUEUE_NAME = "volcano.sh/queue-name"
TASK_SPEC = "volcano.sh/task-spec"
TASK_INDEX = "volcano.sh/task-index"
JOB_VERSION = "volcano.sh/job-version"
TASK_INDEX_ENV = "VK_TASK_INDEX"

BATCH_API = "batch.volcano.sh/v1alpha1"
SCHEDULING_API = "scheduling.volcano.sh/v1beta1"
BUS_API = "bus.volcano.sh/v1alpha1"
JOB_KEY = "Job.batch.volcano.sh"
DEFAULT_QUEUE = "default"
SCHEDULER_NAME = "volcano"

QUEUE_STATES = ("Open", "Closed", "Closing", "Unknown")
PODGROUP_PHASES = ("Pending", "Running", "Unknown", "Inqueue", "Completed")
JOB_PHASES = (
    "Pending", "Aborting", "Aborted", "Running", "Restarting", "Completing", "Completed",
    "Terminating", "Terminated", "Failed",
)  # fmt: skip
JOB_FINISHED = ("Completed", "Failed", "Aborted", "Terminated")  # a Job's end phases
# Policy events (Volcano's bus events; "Unknown" is its JobUnknown, both spellings taken).
EVENTS = (
    "*", "PodFailed", "PodEvicted", "PodPending", "PodRunning", "Unknown", "JobUnknown",
    "TaskCompleted", "TaskFailed", "OutOfSync", "CommandIssued", "JobUpdated",
)  # fmt: skip
ACTIONS = (
    "AbortJob", "RestartJob", "RestartTask", "RestartPod", "TerminateJob", "CompleteJob",
    "ResumeJob",
)  # fmt: skip
JOB_PLUGINS = ("env", "svc", "ssh")
# What a Command may order, by the kind of its target.
JOB_COMMANDS = ("AbortJob", "ResumeJob", "RestartJob", "CompleteJob", "TerminateJob")
QUEUE_COMMANDS = ("OpenQueue", "CloseQueue")


class Errors(Protocol):
    def add(self, path: str, problem: str) -> None: ...


def nonneg_int(e: Errors, path: str, value: Any) -> int | None:
    """An integer >= 0 (None when absent), as Volcano's CRD schema words a refusal."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        e.add(path, f"must be an integer, not {value!r}")
        return None
    if value < 0:
        e.add(path, f"Invalid value: {value}: {path} in body should be greater than or equal to 0")
        return None
    return value


def resources(e: Errors, path: str, value: Any, quantity: Callable[[Any], Any]) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        e.add(path, "must be an object of resource quantities")
        return
    for key, v in value.items():
        try:
            if quantity(v) < 0:
                e.add(f"{path}.{key}", "must be >= 0")
        except ValueError as err:
            e.add(f"{path}.{key}", str(err))


def command_target(obj: Object) -> tuple[str, str] | None:
    """("Job" or "Queue", name) of the object a Command targets, if one of those."""
    target = obj.get("target")
    if not isinstance(target, dict):
        return None
    group = str(target.get("apiVersion") or "").split("/", 1)[0]
    kind, name = target.get("kind"), target.get("name")
    if not isinstance(name, str) or not name:
        return None
    if (kind, group) == ("Job", "batch.volcano.sh"):
        return "Job", name
    if (kind, group) == ("Queue", "scheduling.volcano.sh"):
        return "Queue", name
    return None


def command_for(target: Object, action: str, namespace: str) -> Object:
    """A Command ordering `action` on `target` (a Job or Queue as stored), as
    vcctl makes it: generateName `<name>-<action>-`, the target as its
    controller ownerReference (so it goes with its target)."""
    meta = target["metadata"]
    ref = {
        "apiVersion": target.get("apiVersion")
        or (BATCH_API if target.get("kind") == "Job" else SCHEDULING_API),
        "kind": target["kind"],
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": BUS_API,
        "kind": "Command",
        "metadata": {
            "generateName": f"{meta['name']}-{action.lower()}-",
            "namespace": namespace,
            "ownerReferences": [ref],
        },
        "action": action,
        "target": ref,
    }


# ---- defaults -------------------------------------------------------------------


def default_queue(obj: Object) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("weight", 1)
    spec.setdefault("reclaimable", True)
    obj.setdefault("status", {}).setdefault("state", "Open")


def default_podgroup(obj: Object) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("minMember", 1)
    spec.setdefault("queue", DEFAULT_QUEUE)
    obj.setdefault("status", {}).setdefault("phase", "Pending")


def default_job(obj: Object) -> None:
    """Volcano's job mutating webhook: queue, scheduler, maxRetry; each task's
    name, minAvailable (its replicas), maxRetry (3) and a hostNetwork pod's
    dnsPolicy; the job's minAvailable, the sum of its tasks'."""
    spec = obj.setdefault("spec", {})
    if not spec.get("queue"):  # "" too, as the webhook's patchDefaultQueue
        spec["queue"] = DEFAULT_QUEUE
    if not spec.get("schedulerName"):
        spec["schedulerName"] = SCHEDULER_NAME
    if not spec.get("maxRetry"):  # 0 too, as patchDefaultMaxRetry
        spec["maxRetry"] = 3
    tasks = spec.get("tasks")
    total = 0
    if isinstance(tasks, list):
        for i, task in enumerate(tasks):
            if not isinstance(task, dict):
                continue
            if not task.get("name"):
                task["name"] = f"default{i}"
            replicas = task.setdefault("replicas", 1)
            if task.get("minAvailable") is None and isinstance(replicas, int):
                task["minAvailable"] = replicas
            if not task.get("maxRetry"):
                task["maxRetry"] = 3
            pod = (task.get("template") or {}).get("spec")
            if isinstance(pod, dict) and pod.get("hostNetwork") and not pod.get("dnsPolicy"):
                pod["dnsPolicy"] = "ClusterFirstWithHostNet"
            task_min = task.get("minAvailable")
            if isinstance(task_min, int) and not isinstance(task_min, bool):
                total += task_min
    if not spec.get("minAvailable"):
        spec["minAvailable"] = total
    status = obj.setdefault("status", {})
    status.setdefault("state", {"phase": "Pending"})
