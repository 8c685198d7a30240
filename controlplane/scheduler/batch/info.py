"""What a session knows of jobs and queues: `JobInfo`, `QueueInfo` and their resources.

A *job* is a PodGroup with its pods: the pods placed (bound or assumed in the
cache) and those pending. A *queue* adds up its jobs. Resources are cpu
(millicores) and memory (bytes), as `Res` dicts; `add`, `le` and `req` are
the arithmetic every part of the batch scheduler shares (Volcano's
`api.Resource`, `JobInfo` and `QueueInfo`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from controlplane.api import volcano
from controlplane.scheduler.podinfo import PodInfo

Obj = dict[str, Any]
Res = dict[str, int]
DIMS = ("cpu", "memory")
# Volcano's PodGroup states and condition reason (scheduling/v1beta1).
POD_GROUP_READY = "pod group is ready"
POD_GROUP_NOT_READY = "pod group is not ready"
NOT_ENOUGH_RESOURCES = "NotEnoughResources"
QUEUE_QUOTA = "queue resource quota insufficient"


def add(a: Res, b: Res, sign: int = 1) -> None:
    for k, v in b.items():
        a[k] = a.get(k, 0) + sign * v


def req(p: PodInfo) -> Res:
    """The pod's cpu and memory request (computed once per parsed pod; do not modify)."""
    r: Res | None = p.extra.get("_vreq")
    if r is None:
        r = p.extra["_vreq"] = {d: p.requests.get(d, 0) for d in DIMS}
    return r


def le(a: Res, b: Res, dims: Iterable[str] = DIMS) -> bool:
    """a <= b in every dimension given."""
    return all(a.get(d, 0) <= b.get(d, 0) for d in dims)


def task_name(p: PodInfo) -> str:
    """The pod's task in its job (computed once per parsed pod)."""
    t: str | None = p.extra.get("_vtask")
    if t is None:
        annotations = (p.pod.get("metadata") or {}).get("annotations") or {}
        t = p.extra["_vtask"] = str(annotations.get(volcano.TASK_SPEC, ""))
    return t


@dataclass
class QueueInfo:
    name: str
    weight: int = 1
    capability: Res | None = None
    guarantee: Res = field(default_factory=dict)
    reclaimable: bool = True
    state: str = "Open"
    deserved: Res = field(default_factory=dict)
    allocated: Res = field(default_factory=dict)
    request: Res = field(default_factory=dict)
    inqueue: Res = field(default_factory=dict)  # minResources of its Inqueue jobs not yet running
    lowest: int | None = None  # the lowest priority of its jobs with pods placed
    parent: str = ""  # spec.parent ("" or "root": a top-level queue)
    spec_deserved: Res | None = None  # spec.deserved (the capacity plugin's share)


@dataclass
class JobInfo:
    key: str  # namespace/name of the PodGroup
    group: Obj
    queue: str
    min_member: int
    min_task_member: dict[str, int]
    min_resources: Res
    priority: int
    created: float
    phase: str
    pending: list[PodInfo] = field(default_factory=list)
    placed: dict[str, PodInfo] = field(default_factory=dict)
    allocated: Res = field(default_factory=dict)
    request: Res = field(default_factory=dict)
    # Member pods that ran to their end, per task (Succeeded) and in all (Failed).
    succeeded: dict[str, int] = field(default_factory=dict)
    failed: int = 0
    best_effort: int = 0  # of its pending pods, those that request nothing
    # Counted when the snapshot builds it (the checks read them, never its pods):
    min_task_total: int = 0  # the sum of min_task_member
    done: int = 0  # its pods that succeeded
    members: dict[str, int] = field(default_factory=dict)  # per task, placed+pending+done
    valid_tasks: bool = True  # each task has as many members as its minimum, where it counts
    placed_tasks: dict[str, int] = field(default_factory=dict)  # per task, placed (kept current)
    # Set by actions: why the gang could not be placed this session (the
    # PodGroup's Unschedulable condition: its reason and message).
    unschedulable: str = ""
    unschedulable_reason: str = ""
    enqueue_refusal: str = ""  # set by a plugin refusing to enqueue it: why
    waiting_time: float | None = None  # its sla-waiting-time (seconds), if it has one

    @property
    def namespace(self) -> str:
        return self.key.split("/", 1)[0]

    def tasks_checked(self) -> bool:
        """Whether the per-task minimums count: only where the job's own
        minAvailable covers them all (Volcano's JobInfo: a job whose
        minAvailable is below their sum is elastic, its tasks are not)."""
        return bool(self.min_task_member) and self.min_member >= self.min_task_total

    def ready_num(self) -> int:
        """Tasks placed or succeeded, and pending best-effort ones (ReadyTaskNum
        plus PendingBestEffortTaskNum): what minAvailable is held against."""
        return len(self.placed) + self.done + self.best_effort

    def task_ready(self, task: str) -> int:
        """The task's pods placed or succeeded, and its pending best-effort ones."""
        n = self.placed_tasks.get(task, 0)
        if self.succeeded:
            n += self.succeeded.get(task, 0)
        if self.best_effort:
            n += sum(1 for p in self.pending if p.best_effort and task_name(p) == task)
        return n

    def place(self, task: PodInfo, sign: int) -> None:
        """Count a pod placed (1) or taken off (-1) in its task (the statement
        keeps the count as it goes)."""
        t = task_name(task)
        self.placed_tasks[t] = self.placed_tasks.get(t, 0) + sign


def _task_status(p: PodInfo) -> str:
    """The pod's status as Volcano's TaskStatus names it."""
    if (p.pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Releasing"
    if (p.pod.get("status") or {}).get("phase") == "Running":
        return "Running"
    return "Bound" if (p.pod.get("spec") or {}).get("nodeName") else "Allocated"


def _histogram(counts: dict[str, int]) -> str:
    return ", ".join(sorted(f"{n} {what}" for what, n in counts.items() if n))


def gang_message(job: JobInfo, tentative: int = 0, origin: str = "") -> str:
    """Why the gang is not placed, in Volcano's words (gang's session close
    and JobInfo.FitError): `<unready>/<tasks> tasks in gang unschedulable:
    pod group is not ready, <tasks by status>, <n> minAvailable; Pending:
    <pending tasks by reason>. Origin reason is <pod>: <why>`. `tentative`:
    pending tasks a statement could place before the gang fell short."""
    statuses: dict[str, int] = {}
    for p in job.placed.values():
        st = _task_status(p)
        statuses[st] = statuses.get(st, 0) + 1
    done = job.done
    statuses.update(Pending=len(job.pending), Succeeded=done, Failed=job.failed)
    statuses["minAvailable"] = job.min_member
    ready = job.ready_num() >= job.min_member
    text = f"{POD_GROUP_READY if ready else POD_GROUP_NOT_READY}, {_histogram(statuses)}"
    if job.pending:
        reasons = {"Schedulable": tentative, "Unschedulable": len(job.pending) - tentative}
        text += f"; Pending: {_histogram(reasons)}"
    if origin:
        text += f". Origin reason is {origin}"
    unready = max(job.min_member - tentative - job.ready_num(), 0)
    total = len(job.placed) + len(job.pending) + done + job.failed
    return f"{unready}/{total} tasks in gang unschedulable: {text}"
