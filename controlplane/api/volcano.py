"""Volcano's batch kinds: their constants, defaults and validation (its webhook's rules).

Kinds (their modules: controlplane/api/kinds/volcano/):
`scheduling.volcano.sh/v1beta1` Queue (cluster-scoped) and PodGroup,
`batch.volcano.sh/v1alpha1` Job (key "Job.batch.volcano.sh"), and `bus.volcano.sh/v1alpha1` Command (a user's one-shot order to the Job
or Queue controller: `action`, `target` (an ownerReference), `reason`,
`message`, top-level fields as Volcano has them; vcctl's job
suspend/resume and queue operate create them). Field names and rules are Volcano's, so its
example manifests apply unchanged and its invalid ones
(example/invalid_jobs/) are refused naming the field:

- a Job needs at least one task; task names are unique DNS labels;
- `minAvailable` is not above the sum of the tasks' replicas, a task's
  `minAvailable` not above its replicas;
- one event appears in one policy only; an action is one Volcano knows;
- plugins are `env`, `svc`, `ssh`.

Whether the queue named exists and is Open needs the store: that is
admission (kinds/volcano/queue.py, check_open). This module is pure data and
functions; it imports nothing of the server or the client.
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


PodSpecCheck = Callable[[Errors, str, Any], None]


def _nonneg_int(e: Errors, path: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        e.add(path, f"must be an integer, not {value!r}")
        return None
    if value < 0:
        e.add(path, "must be >= 0")
        return None
    return value


def _resources(e: Errors, path: str, value: Any, quantity: Callable[[Any], Any]) -> None:
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


def _policies(e: Errors, path: str, policies: Any) -> None:
    if policies is None:
        return
    if not isinstance(policies, list):
        e.add(path, "must be a list")
        return
    seen: set[str] = set()
    for i, pol in enumerate(policies):
        where = f"{path}[{i}]"
        if not isinstance(pol, dict):
            e.add(where, "must be an object")
            continue
        events = list(pol.get("events") or [])
        if pol.get("event"):
            events.append(pol["event"])
        if not events and pol.get("exitCode") is None:
            e.add(f"{where}.event", "either event or exitCode is required")
        if events and pol.get("exitCode") is not None:
            e.add(f"{where}.exitCode", "must not be set together with event")
        for ev in events:
            if ev not in EVENTS:
                e.add(f"{where}.event", f"invalid policy event {ev!r}")
            elif ev in seen:
                e.add(f"{where}.event", f"duplicate event {ev} across different policy")
            seen.add(str(ev))
        action = pol.get("action")
        if action is not None and action not in ACTIONS:
            e.add(f"{where}.action", f"invalid policy action {action!r}")


def validate_job(
    e: Errors,
    obj: Object,
    old: Object | None,
    pod_spec: PodSpecCheck,
    is_label: Callable[[str], bool],
    quantity: Callable[[Any], Any],
) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        e.add("spec", "required")
        return
    min_available = _nonneg_int(e, "spec.minAvailable", spec.get("minAvailable"))
    _nonneg_int(e, "spec.maxRetry", spec.get("maxRetry"))
    _nonneg_int(e, "spec.ttlSecondsAfterFinished", spec.get("ttlSecondsAfterFinished"))
    tasks = spec.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        e.add("spec.tasks", "No task specified in job spec")
        return
    names: set[str] = set()
    total = 0
    for i, task in enumerate(tasks):
        where = f"spec.tasks[{i}]"
        if not isinstance(task, dict):
            e.add(where, "must be an object")
            continue
        name = task.get("name")
        if not isinstance(name, str) or not is_label(name):
            e.add(f"{where}.name", f"{name!r} must be a DNS-1123 label")
        elif name in names:
            e.add(f"{where}.name", f"duplicated task name {name}")
        else:
            names.add(name)
        replicas = _nonneg_int(e, f"{where}.replicas", task.get("replicas"))
        total += replicas or 0
        task_min = _nonneg_int(e, f"{where}.minAvailable", task.get("minAvailable"))
        if task_min is not None and replicas is not None and task_min > replicas:
            e.add(f"{where}.minAvailable", "'minAvailable' is greater than 'replicas'")
        _nonneg_int(e, f"{where}.maxRetry", task.get("maxRetry"))
        _policies(e, f"{where}.policies", task.get("policies"))
        template = task.get("template")
        if not isinstance(template, dict):
            e.add(f"{where}.template", "required")
        else:
            pod_spec(e, f"{where}.template.spec", template.get("spec"))
    if min_available is not None and min_available > total:
        e.add(
            "spec.minAvailable",
            "job 'minAvailable' should not be greater than total replicas in tasks",
        )
    _policies(e, "spec.policies", spec.get("policies"))
    plugins = spec.get("plugins")
    if plugins is not None:
        if not isinstance(plugins, dict):
            e.add("spec.plugins", "must be an object of plugin name -> arguments")
        else:
            for name in plugins:
                if name not in JOB_PLUGINS:
                    e.add(f"spec.plugins.{name}", f"unable to find job plugin: {name}")
    queue = spec.get("queue")
    if queue is not None and (not isinstance(queue, str) or not queue):
        e.add("spec.queue", "must be a queue name")
    _volumes(e, spec.get("volumes"))


def _volumes(e: Errors, volumes: Any) -> None:
    """Volcano's job IO check: each volume has a unique mountPath and names an
    existing claim (volumeClaimName) or describes a new one (volumeClaim), not both."""
    if volumes is None:
        return
    if not isinstance(volumes, list):
        e.add("spec.volumes", "must be a list")
        return
    paths: set[str] = set()
    for i, vol in enumerate(volumes):
        where = f"spec.volumes[{i}]"
        if not isinstance(vol, dict):
            e.add(where, "must be an object")
            continue
        path = vol.get("mountPath")
        if not isinstance(path, str) or not path:
            e.add(f"{where}.mountPath", "mountPath is required")
        elif path in paths:
            e.add(f"{where}.mountPath", f"duplicated mountPath: {path}")
        else:
            paths.add(path)
        name, claim = vol.get("volumeClaimName"), vol.get("volumeClaim")
        if name is not None and (not isinstance(name, str) or not name):
            e.add(f"{where}.volumeClaimName", "must be a claim name")
        if claim is not None and not isinstance(claim, dict):
            e.add(f"{where}.volumeClaim", "must be a PersistentVolumeClaim spec")
        if not name and claim is None:
            e.add(where, "either volumeClaim or volumeClaimName must be specified")
        elif name and claim is not None:
            e.add(
                where,
                "conflict: to use an existing claim give only volumeClaimName; "
                "to create one give only volumeClaim",
            )


def validate_queue(
    e: Errors, obj: Object, old: Object | None, quantity: Callable[[Any], Any]
) -> None:
    spec = obj.get("spec") or {}
    if not isinstance(spec, dict):
        e.add("spec", "must be an object")
        return
    weight = spec.get("weight")
    if weight is not None and (
        isinstance(weight, bool) or not isinstance(weight, int) or weight <= 0
    ):
        e.add("spec.weight", f"queue weight must be a positive integer, not {weight!r}")
    for field in ("capability", "deserved"):
        _resources(e, f"spec.{field}", spec.get(field), quantity)
    guarantee = spec.get("guarantee")
    if guarantee is not None:
        if not isinstance(guarantee, dict):
            e.add("spec.guarantee", "must be an object with `resource`")
        else:
            _resources(e, "spec.guarantee.resource", guarantee.get("resource"), quantity)
    if "reclaimable" in spec and not isinstance(spec["reclaimable"], bool):
        e.add("spec.reclaimable", "must be a boolean")
    state = (obj.get("status") or {}).get("state")
    if state is not None and state not in QUEUE_STATES:
        e.add("status.state", f"unsupported value {state!r}: supported: {', '.join(QUEUE_STATES)}")


def validate_podgroup(
    e: Errors, obj: Object, old: Object | None, quantity: Callable[[Any], Any]
) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        e.add("spec", "required")
        return
    _nonneg_int(e, "spec.minMember", spec.get("minMember"))
    timeout = spec.get("scheduleTimeoutSeconds")  # skiff's Coscheduling extension
    if timeout is not None and (_nonneg_int(e, "spec.scheduleTimeoutSeconds", timeout) or 0) < 1:
        e.add("spec.scheduleTimeoutSeconds", "must be >= 1")
    tm = spec.get("minTaskMember")
    if tm is not None:
        if not isinstance(tm, dict):
            e.add("spec.minTaskMember", "must be an object of task name -> count")
        else:
            for k, v in tm.items():
                _nonneg_int(e, f"spec.minTaskMember.{k}", v)
    _resources(e, "spec.minResources", spec.get("minResources"), quantity)
    phase = (obj.get("status") or {}).get("phase")
    if phase is not None and phase not in PODGROUP_PHASES:
        e.add(
            "status.phase", f"unsupported value {phase!r}: supported: {', '.join(PODGROUP_PHASES)}"
        )


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


def validate_command(e: Errors, obj: Object, old: Object | None) -> None:
    target = obj.get("target")
    if not isinstance(target, dict):
        e.add("target", "required: the ownerReference of the Job or Queue to act on")
        return
    for field in ("apiVersion", "kind", "name"):
        if not isinstance(target.get(field), str) or not target.get(field):
            e.add(f"target.{field}", "required")
    found = command_target(obj)
    if found is None:
        if all(isinstance(target.get(f), str) and target.get(f) for f in ("apiVersion", "kind")):
            e.add(
                "target",
                f"{target.get('kind')} ({target.get('apiVersion')}) takes no commands: "
                f"a target is a Job ({BATCH_API}) or a Queue ({SCHEDULING_API})",
            )
        return
    allowed = JOB_COMMANDS if found[0] == "Job" else QUEUE_COMMANDS
    action = obj.get("action")
    if action not in allowed:
        e.add("action", f"unsupported value {action!r} for a {found[0]}: supported: "
                        f"{', '.join(allowed)}")  # fmt: skip
    for field in ("reason", "message"):
        if obj.get(field) is not None and not isinstance(obj.get(field), str):
            e.add(field, "must be a string")
    if old is not None:
        for field in ("action", "target"):
            if obj.get(field) != old.get(field):
                e.add(field, "field is immutable")


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
    """Volcano's mutating webhook: queue, scheduler, maxRetry, task names and minAvailable."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("queue", DEFAULT_QUEUE)
    spec.setdefault("schedulerName", SCHEDULER_NAME)
    spec.setdefault("maxRetry", 3)
    tasks = spec.get("tasks")
    total = 0
    if isinstance(tasks, list):
        for i, task in enumerate(tasks):
            if not isinstance(task, dict):
                continue
            if not task.get("name"):
                task["name"] = f"default{i}"
            replicas = task.setdefault("replicas", 1)
            if isinstance(replicas, int):
                total += replicas
                task.setdefault("minAvailable", replicas)
    if not spec.get("minAvailable"):
        spec["minAvailable"] = total
    status = obj.setdefault("status", {})
    status.setdefault("state", {"phase": "Pending"})
