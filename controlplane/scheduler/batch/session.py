"""One scheduling session: a snapshot of jobs and queues, the plugins' functions, statements.

A *job* is a PodGroup with its pods (`JobInfo`): the pods placed (bound or
assumed in the cache) and those pending. A *queue* (`QueueInfo`) adds up its
jobs. The session works on the scheduler's cache: placing a task assumes it
there (so the next task sees it), through a `Statement` that is committed or
discarded as a whole, which is how a gang is all-or-nothing.

Plugins register functions by extension point (Volcano's session API):
order keys for jobs, queues and tasks; `ready`/`valid` for jobs;
`preemptable`/`reclaimable` victim filters; `overused`/`allocatable` for
queues; `enqueueable` for jobs. Tiers: order keys are compared tier by tier
(the first plugin that tells two jobs apart decides); a victim must be let go
by every enabled victim filter of every tier.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from controlplane.api import volcano
from controlplane.scheduler.batch.placement import Placer
from controlplane.scheduler.cache import Cache
from controlplane.scheduler.framework import Framework
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import CycleState

Obj = dict[str, Any]
Res = dict[str, int]
DIMS = ("cpu", "memory")


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
    # Set by actions: why the gang could not be placed this session.
    unschedulable: str = ""

    @property
    def namespace(self) -> str:
        return self.key.split("/", 1)[0]

    def placed_per_task(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.placed.values():
            t = task_name(p)
            out[t] = out.get(t, 0) + 1
        return out


class Statement:
    """Placements and evictions of one gang, committed or discarded together.

    A placement may carry the cycle state its filters and Reserve left (the
    volume plugins' plans): discarded, it is unreserved; committed, it goes
    with the bind, whose PreBind needs it.
    """

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.placed: list[tuple[JobInfo, PodInfo, str]] = []
        self.evicted: list[tuple[JobInfo, PodInfo, str]] = []
        self.states: dict[str, CycleState] = {}

    def allocate(
        self, job: JobInfo, task: PodInfo, node: str, state: CycleState | None = None
    ) -> None:
        ssn = self.ssn
        if state is not None:
            self.states[task.key] = state
        ssn.cache.assume_pod(task, node)
        ssn.touched.add(job.key)
        job.pending.remove(task)
        job.placed[task.key] = task
        r = req(task)
        add(job.allocated, r)
        add(ssn.queues[job.queue].allocated, r)
        self.placed.append((job, task, node))

    def evict(self, job: JobInfo, victim: PodInfo) -> None:
        ssn = self.ssn
        node = ssn.cache.node_of(victim.key) or ""
        info = ssn.cache.nodes.get(node)
        if info is not None:
            ssn.cache._unplace(victim, info)
        ssn.touched.add(job.key)
        job.placed.pop(victim.key, None)
        r = req(victim)
        add(job.allocated, r, -1)
        add(ssn.queues[job.queue].allocated, r, -1)
        self.evicted.append((job, victim, node))

    def undo_evict(self, job: JobInfo, victim: PodInfo, node: str) -> None:
        """Put back one victim evicted in this statement."""
        ssn = self.ssn
        self.evicted.remove((job, victim, node))
        info = ssn.cache.nodes.get(node)
        if info is not None and victim.key not in info.pods:
            ssn.cache._place(victim, info)
        job.placed[victim.key] = victim
        add(job.allocated, req(victim))
        add(ssn.queues[job.queue].allocated, req(victim))

    def _unreserve(self) -> None:
        for _job, task, node in reversed(self.placed):
            state = self.states.pop(task.key, None)
            if state is not None:
                self.ssn.framework.run_unreserve(state, task, node)

    def discard(self) -> None:
        ssn = self.ssn
        self._unreserve()
        for job, task, _node in reversed(self.placed):
            ssn.cache.forget_pod(task.key)
            job.placed.pop(task.key, None)
            job.pending.append(task)
            r = req(task)
            add(job.allocated, r, -1)
            add(ssn.queues[job.queue].allocated, r, -1)
        self._restore_victims()
        self.placed = []

    def _restore_victims(self) -> None:
        ssn = self.ssn
        for job, victim, node in reversed(self.evicted):
            info = ssn.cache.nodes.get(node)
            if info is not None and victim.key not in info.pods:
                ssn.cache._place(victim, info)
            job.placed[victim.key] = victim
            r = req(victim)
            add(job.allocated, r)
            add(ssn.queues[job.queue].allocated, r)
        self.evicted = []

    def commit(self) -> None:
        """The placements become binds, the evictions deletions (after the session)."""
        self.ssn.binds.extend((task, node) for _job, task, node in self.placed)
        self.ssn.bind_states.update(self.states)
        self.ssn.evictions.extend(victim for _job, victim, _node in self.evicted)
        self.states = {}
        self.placed = []
        self.evicted = []

    def commit_evictions(self, job: JobInfo) -> None:
        """Evict the victims but bind nobody yet: the preemptor's tasks stay placed
        for the rest of the session (Volcano's pipelined tasks), so that the room
        is not given to anyone else nor its victims chosen again; the scheduler
        discards the statement when the session ends and holds the room for the
        job until its victims are gone."""
        self.ssn.evictions.extend(v for _j, v, _n in self.evicted)
        self.ssn.pipelined.append((job, self))


KeyFn = Callable[[Any], Any]
VictimFn = Callable[
    [JobInfo, PodInfo, list[tuple[JobInfo, PodInfo]]], list[tuple[JobInfo, PodInfo]]
]


@dataclass
class Tier:
    job_order: list[KeyFn] = field(default_factory=list)
    queue_order: list[KeyFn] = field(default_factory=list)
    task_order: list[KeyFn] = field(default_factory=list)
    preemptable: list[VictimFn] = field(default_factory=list)
    reclaimable: list[VictimFn] = field(default_factory=list)


class Session:
    def __init__(
        self,
        cache: Cache,
        framework: Framework,
        jobs: dict[str, JobInfo],
        queues: dict[str, QueueInfo],
        total: Res,
        deadline: float | None = None,
        clock: Callable[[], float] | None = None,
        more: Callable[[dict[str, JobInfo]], None] | None = None,
    ) -> None:
        self.cache = cache
        self.framework = framework
        self.placer = Placer(cache, framework)
        # The jobs the actions may place or enqueue (and those whose status is
        # due); `all_jobs()` adds the others, placed and settled, when asked.
        self.jobs = jobs
        self._more = more
        self._owner: dict[str, JobInfo] | None = None
        self.queues = queues
        self.total = total  # the cluster's allocatable
        self.tiers: list[Tier] = []
        self.job_ready_fns: list[Callable[[JobInfo], bool]] = []
        self.job_valid_fns: list[Callable[[JobInfo], str]] = []
        self.overused_fns: list[Callable[[QueueInfo], bool]] = []
        self.allocatable_fns: list[Callable[[QueueInfo, PodInfo], bool]] = []
        self.enqueueable_fns: list[Callable[[JobInfo], bool]] = []
        self.pipelined_fns: list[Callable[[JobInfo], bool]] = []
        self.binds: list[tuple[PodInfo, str]] = []
        self.bind_states: dict[str, CycleState] = {}  # pod key -> its placement's cycle state
        self.evictions: list[PodInfo] = []
        self.enqueued: list[JobInfo] = []
        # Jobs waiting for room being freed for them, their tasks placed there
        # until the session ends (never bound in this session).
        self.pipelined: list[tuple[JobInfo, Statement]] = []
        # Jobs whose pods a statement placed or evicted (even if discarded since).
        self.touched: set[str] = set()
        self.deadline = deadline
        self._clock = clock

    def all_jobs(self) -> dict[str, JobInfo]:
        """Every job (the snapshot's others added to `jobs` once)."""
        if self._more is not None:
            more, self._more = self._more, None
            more(self.jobs)
        return self.jobs

    def owner(self) -> dict[str, JobInfo]:
        """Per placed pod's key, its job (built once, the first time a victim is sought)."""
        if self._owner is None:
            self._owner = {pk: j for j in self.all_jobs().values() for pk in j.placed}
        return self._owner

    def out_of_time(self) -> bool:
        return (
            self.deadline is not None and self._clock is not None and self._clock() >= self.deadline
        )

    # ---- tiers ------------------------------------------------------------

    def _key(self, fns: str, obj: Any) -> tuple[Any, ...]:
        return tuple(f(obj) for tier in self.tiers for f in getattr(tier, fns))

    def job_key(self, job: JobInfo) -> tuple[Any, ...]:
        return (*self._key("job_order", job), job.created, job.key)

    def queue_key(self, q: QueueInfo) -> tuple[Any, ...]:
        return (*self._key("queue_order", q), q.name)

    def task_key(self, t: PodInfo) -> tuple[Any, ...]:
        return (*self._key("task_order", t), t.created, t.key)

    def _victims(
        self, kind: str, preemptor_job: JobInfo, preemptor: PodInfo,
        candidates: list[tuple[JobInfo, PodInfo]],
    ) -> list[tuple[JobInfo, PodInfo]]:  # fmt: skip
        """The candidates every enabled plugin, in every tier, lets go (none if no
        plugin speaks: nothing is evicted without a rule allowing it)."""
        keep: set[str] | None = None
        for tier in self.tiers:
            fns: list[VictimFn] = getattr(tier, kind)
            for f in fns:
                allowed = {p.key for _j, p in f(preemptor_job, preemptor, candidates)}
                keep = allowed if keep is None else keep & allowed
        if not keep:
            return []
        return [(j, p) for j, p in candidates if p.key in keep]

    def preemptable(
        self, job: JobInfo, task: PodInfo, candidates: list[tuple[JobInfo, PodInfo]]
    ) -> list[tuple[JobInfo, PodInfo]]:
        return self._victims("preemptable", job, task, candidates)

    def reclaimable(
        self, job: JobInfo, task: PodInfo, candidates: list[tuple[JobInfo, PodInfo]]
    ) -> list[tuple[JobInfo, PodInfo]]:
        return self._victims("reclaimable", job, task, candidates)

    # ---- AND / OR of plugin answers --------------------------------------------

    def job_ready(self, job: JobInfo) -> bool:
        return all(f(job) for f in self.job_ready_fns)

    def job_pipelined(self, job: JobInfo) -> bool:
        return all(f(job) for f in self.pipelined_fns)

    def job_valid(self, job: JobInfo) -> str:
        for f in self.job_valid_fns:
            reason = f(job)
            if reason:
                return reason
        return ""

    def overused(self, q: QueueInfo) -> bool:
        return any(f(q) for f in self.overused_fns)

    def allocatable(self, q: QueueInfo, task: PodInfo) -> bool:
        return all(f(q, task) for f in self.allocatable_fns)

    def enqueueable(self, job: JobInfo) -> bool:
        return all(f(job) for f in self.enqueueable_fns)

    def statement(self) -> Statement:
        return Statement(self)
