"""The session's jobs and queues, kept between sessions and rebuilt per PodGroup only where something changed.

A session starts from a snapshot: the PodGroups as `JobInfo`s (their spec's
facts, their placed and pending pods, what they request) and the Queues as
`QueueInfo`s adding them up. Building every job from its pods at each
session made a session's cost grow with every group in the cluster, running
or not, and sessions come a few times a second while pods keep arriving; so
`Snapshots` keeps, per group,

- the facts parsed from the PodGroup object (queue, minMember, minResources,
  creation time), parsed again only when the object is replaced;
- its members as last seen (placed pods, pending pods, allocated and
  requested resources), rebuilt only after `invalidate(key)`: the scheduler
  calls it when a member pod changes what the cache counts of it (not for a
  status write of a running pod), comes, goes or finishes, a bind fails, or
  a session placed or evicted one of its pods; `invalidate_all()` when nodes come or go or
  priority classes change; `group_changed(key)` when only the PodGroup
  object was replaced (its status: the job's phase);
- the job built from both, and what it adds to its queue (allocated,
  requested, inqueue, its priority when it has pods placed): each queue's
  sums move by a group's old and new part when the group is rebuilt.

`take(want)` then hands the session copies of the *active* jobs only (those
with pods pending, or a Pending phase: the ones the actions may place or
enqueue) and of the jobs in `want` (those whose status is due), and the
queues with their sums: a cost per changed or active group, not per group.
The other jobs, placed and settled, come only when an action asks for every
job (`more`: preempt and reclaim pick victims among them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controlplane.api import volcano
from controlplane.scheduler import resources
from controlplane.scheduler.batch.conf import parse_duration
from controlplane.scheduler.batch.info import DIMS, JobInfo, QueueInfo, Res, add, req, task_name
from controlplane.scheduler.cache import CPU_COL, MEM_COL, Cache, finished
from controlplane.scheduler.podinfo import PodInfo, parse_time

Obj = dict[str, Any]
CPU, MEM = DIMS
SLA_WAITING_TIME = "sla-waiting-time"  # a PodGroup's own limit for the sla plugin
ROOT_QUEUE = "root"  # Volcano's top of the queue hierarchy


def res(raw: Any) -> Res:
    """cpu and memory of a resource list (millicores, bytes)."""
    rl = resources.resource_list(raw) if isinstance(raw, dict) else {}
    return {d: rl[d] for d in DIMS if d in rl}


@dataclass(frozen=True)
class _Facts:
    queue: str
    min_member: int
    min_task_member: dict[str, int]
    min_resources: Res
    priority_class: str
    created: float
    waiting_time: float | None  # its sla-waiting-time annotation, in seconds


@dataclass(frozen=True)
class _Members:
    placed: dict[str, PodInfo]
    pending: list[PodInfo]
    allocated: Res
    request: Res
    best: int | None  # the highest priority of its pods
    succeeded: dict[str, int]  # per task, its pods that succeeded
    failed: int
    best_effort: int  # its pending pods that request nothing
    placed_tasks: dict[str, int]  # per task, its pods placed
    per_task: dict[str, int]  # per task, its pods placed, pending or succeeded


@dataclass(frozen=True)
class _Part:
    """What one job adds to its queue's sums."""

    queue: str
    allocated: Res
    request: Res
    inqueue: Res
    priority: int | None  # the job's, when it has pods placed


@dataclass
class _Sums:
    allocated: Res = field(default_factory=dict)
    request: Res = field(default_factory=dict)
    inqueue: Res = field(default_factory=dict)
    priorities: Counter[int] = field(default_factory=Counter)  # of jobs with pods placed

    def move(self, part: _Part, sign: int) -> None:
        add(self.allocated, part.allocated, sign)
        add(self.request, part.request, sign)
        add(self.inqueue, part.inqueue, sign)
        if part.priority is not None:
            self.priorities[part.priority] += sign
            if not self.priorities[part.priority]:
                del self.priorities[part.priority]


def _task_of(pod: Obj) -> str:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(volcano.TASK_SPEC, ""))


def _same_source(old: Obj, new: Obj) -> bool:
    """The two objects give the same facts: same spec, creation time, annotations."""
    if old.get("spec") != new.get("spec"):
        return False
    a, b = old.get("metadata") or {}, new.get("metadata") or {}
    return bool(
        a.get("creationTimestamp") == b.get("creationTimestamp")
        and a.get("annotations") == b.get("annotations")
    )


def _facts(group: Obj) -> _Facts:
    spec = group.get("spec") or {}
    return _Facts(
        queue=spec.get("queue") or volcano.DEFAULT_QUEUE,
        min_member=int(spec.get("minMember", 1)),
        min_task_member={str(k): int(v) for k, v in (spec.get("minTaskMember") or {}).items()},
        min_resources=res(spec.get("minResources")),
        priority_class=spec.get("priorityClassName") or "",
        created=parse_time((group.get("metadata") or {}).get("creationTimestamp")) or 0.0,
        waiting_time=parse_duration(
            ((group.get("metadata") or {}).get("annotations") or {}).get(SLA_WAITING_TIME)
        ),
    )


def queue_info(name: str, q: Obj) -> QueueInfo:
    spec = q.get("spec") or {}
    return QueueInfo(
        name,
        weight=int(spec.get("weight") or 1),
        capability=res(spec["capability"]) if spec.get("capability") else None,
        guarantee=res((spec.get("guarantee") or {}).get("resource")),
        reclaimable=spec.get("reclaimable", True) is not False,
        state=(q.get("status") or {}).get("state") or "Open",
        parent="" if spec.get("parent") in (None, "", ROOT_QUEUE) else str(spec["parent"]),
        spec_deserved=res(spec["deserved"]) if spec.get("deserved") else None,
    )


def _copy(job: JobInfo) -> JobInfo:
    """A job the session may change (its lists and dicts its own). Without the
    dataclass's __init__: a session copies every job waiting for room."""
    new = object.__new__(JobInfo)
    new.__dict__.update(job.__dict__)
    new.pending = list(job.pending)
    new.placed = dict(job.placed)
    new.allocated = dict(job.allocated)
    new.request = dict(job.request)
    new.placed_tasks = dict(job.placed_tasks)
    return new


class Snapshots:
    """Per-group memory of the last snapshot; see the module docstring."""

    def __init__(
        self,
        cache: Cache,
        groups: Mapping[str, Obj],
        members: Mapping[str, set[str]],
        queues: Mapping[str, Obj],
        pending: Mapping[str, PodInfo],
        priority_classes: Mapping[str, int],
        finished: Mapping[str, Obj],
    ) -> None:
        self.cache = cache
        self.finished = finished
        self.groups = groups
        self.members = members
        self.queues = queues
        self.pending = pending
        self.priority_classes = priority_classes
        self._facts: dict[str, tuple[Obj, _Facts]] = {}
        self._members: dict[str, _Members] = {}
        self._jobs: dict[str, tuple[JobInfo, _Part]] = {}  # never handed out: copies are
        self._sums: dict[str, _Sums] = {}  # per queue name
        self._active: set[str] = set()
        self._dirty: set[str] = set()

    def invalidate(self, key: str) -> None:
        self._members.pop(key, None)
        self._dirty.add(key)

    def invalidate_all(self) -> None:
        self._members.clear()
        self._dirty.update(self.groups)
        self._dirty.update(self._jobs)

    def group_changed(self, key: str) -> None:
        """The PodGroup object was replaced (a new status, or spec)."""
        self._dirty.add(key)

    def forget(self, key: str) -> None:
        self._members.pop(key, None)
        self._facts.pop(key, None)
        self._dirty.add(key)

    def _facts_of(self, key: str, group: Obj) -> _Facts:
        """The group's facts, parsed again only when what they come from changed
        (a status write, the scheduler's own mostly, changes none of them)."""
        known = self._facts.get(key)
        if known is not None and (known[0] is group or _same_source(known[0], group)):
            self._facts[key] = (group, known[1])
            return known[1]
        facts = _facts(group)
        self._facts[key] = (group, facts)
        return facts

    def _members_of(self, key: str) -> _Members:
        """The group's members, counted in one pass over them (the first
        session over many new groups builds every one: 10,000 pods)."""
        known = self._members.get(key)
        if known is not None:
            return known
        cache = self.cache
        node_of, nodes, waiting = cache.node_of, cache.nodes, self.pending.get
        placed: dict[str, PodInfo] = {}
        pending: list[PodInfo] = []
        best: int | None = None
        succeeded: dict[str, int] = {}
        failed = best_effort = 0
        placed_tasks: dict[str, int] = {}
        per_task: dict[str, int] = {}
        a_cpu = a_mem = p_cpu = p_mem = 0  # placed's requests, pending's
        for pk in self.members.get(key, ()):
            node = node_of(pk)
            p: PodInfo | None
            if node is not None:
                info = nodes.get(node)
                p = info.pods.get(pk) if info is not None else None
                if p is None or finished(p.pod):
                    continue
                placed[pk] = p
                r = req(p)
                a_cpu += r[CPU]
                a_mem += r[MEM]
                t = task_name(p)
                placed_tasks[t] = placed_tasks.get(t, 0) + 1
            else:
                p = waiting(pk)
                if p is None:
                    done = self.finished.get(pk)
                    if done is not None:
                        if (done.get("status") or {}).get("phase") == "Succeeded":
                            t = _task_of(done)
                            succeeded[t] = succeeded.get(t, 0) + 1
                        else:
                            failed += 1
                    continue
                pending.append(p)
                r = req(p)
                p_cpu += r[CPU]
                p_mem += r[MEM]
                best_effort += p.best_effort
                t = task_name(p)
            per_task[t] = per_task.get(t, 0) + 1
            if best is None or p.priority > best:
                best = p.priority
        # As `add` would leave them: no keys without a pod counted.
        allocated: Res = {CPU: a_cpu, MEM: a_mem} if placed else {}
        request: Res = {CPU: a_cpu + p_cpu, MEM: a_mem + p_mem} if placed or pending else {}
        for t, n in succeeded.items():
            per_task[t] = per_task.get(t, 0) + n
        made = _Members(placed, pending, allocated, request, best, succeeded, failed, best_effort,
                        placed_tasks, per_task)  # fmt: skip
        self._members[key] = made
        return made

    def _build(self, key: str, g: Obj) -> tuple[JobInfo, _Part]:
        f = self._facts_of(key, g)
        m = self._members_of(key)
        priority = self.priority_classes.get(f.priority_class, 0) if f.priority_class else 0
        if not f.priority_class and m.best is not None:
            priority = m.best
        job = JobInfo(
            key, g, f.queue,
            min_member=f.min_member,
            min_task_member=f.min_task_member,
            min_resources=f.min_resources,
            priority=priority,
            created=f.created,
            phase=(g.get("status") or {}).get("phase") or "Pending",
            pending=m.pending,
            placed=m.placed,
            allocated=m.allocated,
            request=m.request,
            succeeded=m.succeeded,
            failed=m.failed,
            best_effort=m.best_effort,
            waiting_time=f.waiting_time,
            min_task_total=sum(f.min_task_member.values()),
            done=sum(m.succeeded.values()),
            members=m.per_task,
            placed_tasks=m.placed_tasks,
        )  # fmt: skip
        if job.tasks_checked():
            job.valid_tasks = all(
                not n or m.per_task.get(t, 0) >= n for t, n in f.min_task_member.items()
            )
        inqueue = f.min_resources if job.phase == "Inqueue" and len(m.placed) < f.min_member else {}
        part = _Part(f.queue, m.allocated, m.request, inqueue, priority if m.placed else None)
        return job, part

    def _refresh(self) -> None:
        """Rebuild the changed groups, moving their parts of the queues' sums."""
        for key in self._dirty:
            old = self._jobs.pop(key, None)
            if old is not None:
                self._sums[old[1].queue].move(old[1], -1)
            self._active.discard(key)
            g = self.groups.get(key)
            if g is None:
                continue
            job, part = self._build(key, g)
            self._jobs[key] = (job, part)
            self._sums.setdefault(part.queue, _Sums()).move(part, +1)
            if job.pending or job.phase == "Pending":
                self._active.add(key)
        self._dirty.clear()

    def take(
        self, want: Iterable[str] = ()
    ) -> tuple[dict[str, JobInfo], dict[str, QueueInfo], Res]:
        """The active jobs and those in `want`, the queues, and the cluster's
        allocatable cpu and memory (call under the cache lock)."""
        self._refresh()
        cache = self.cache
        valid = cache.valid[: cache.n]
        alloc = cache.alloc[: cache.n][valid]
        total = {"cpu": int(alloc[:, CPU_COL].sum()), "memory": int(alloc[:, MEM_COL].sum())}
        queues: dict[str, QueueInfo] = {}
        for name, q in self.queues.items():
            qi = queues[name] = queue_info(name, q)
            sums = self._sums.get(name)
            if sums is not None:
                qi.allocated = {d: v for d, v in sums.allocated.items() if v}
                qi.request = {d: v for d, v in sums.request.items() if v}
                qi.inqueue = {d: v for d, v in sums.inqueue.items() if v}
                qi.lowest = min(sums.priorities) if sums.priorities else None
        jobs: dict[str, JobInfo] = {}
        for keys in (self._active, want):
            for key in keys:
                known = self._jobs.get(key)
                if known is not None and key not in jobs and known[0].queue in queues:
                    jobs[key] = _copy(known[0])
        return jobs, queues, total

    def more(self, jobs: dict[str, JobInfo]) -> None:
        """Add every other job of an existing queue to `jobs` (copies)."""
        for key, (job, _part) in self._jobs.items():
            if key not in jobs and job.queue in self.queues:
                jobs[key] = _copy(job)
