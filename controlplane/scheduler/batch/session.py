"""One scheduling session: its jobs and queues, the plugins' functions by extension point.

A session works on a snapshot of jobs and queues (snapshot.py) over the
scheduler's cache; its actions place tasks through `Statement`s
(statement.py) and what it decides gathers in its `Outcome`.

Plugins add functions at named extension points (`Point`, Volcano's
session_plugins.go: `AddJobOrderFn`, `AddJobReadyFn`, ...) through the
`Extensions` a session hands each of them when it opens, one method per
point; a plugin may add only at the points it registered (registry.py).
Order keys (job, queue, task) are compared tier by tier: the first plugin
that tells two apart decides. A victim must be let go by every victim filter
of every tier (none if no plugin speaks). `ready`, `pipelined`,
`allocatable`, `preemptive` are the AND of the plugins' answers, `overused` their OR,
`valid` the first (reason, message) given; `enqueueable` counts votes tier
by tier as Volcano does.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from controlplane.scheduler.batch.info import JobInfo, QueueInfo, Res
from controlplane.scheduler.batch.placement import Placer
from controlplane.scheduler.batch.statement import Outcome, Statement
from controlplane.scheduler.cache import Cache
from controlplane.scheduler.framework import Framework
from controlplane.scheduler.podinfo import PodInfo


class Point(enum.Enum):
    """An extension point (Volcano's names). The session's own, then the
    Framework's, which predicates, nodeorder and binpack fill (nodeplugins.py)."""

    JOB_ORDER = "jobOrder"
    QUEUE_ORDER = "queueOrder"
    TASK_ORDER = "taskOrder"
    JOB_READY = "jobReady"
    JOB_PIPELINED = "jobPipelined"
    JOB_VALID = "jobValid"
    JOB_ENQUEUEABLE = "jobEnqueueable"
    JOB_ENQUEUED = "jobEnqueued"
    OVERUSED = "overused"
    PREEMPTIVE = "preemptive"
    ALLOCATABLE = "allocatable"
    PREEMPTABLE = "preemptable"
    RECLAIMABLE = "reclaimable"
    PREDICATE = "predicate"  # the Framework's filters
    NODE_ORDER = "nodeOrder"  # the Framework's scores


FRAMEWORK_POINTS = frozenset((Point.PREDICATE, Point.NODE_ORDER))
SESSION_POINTS = frozenset(Point) - FRAMEWORK_POINTS

# A plugin's vote on enqueueing a job (Volcano's util.Permit, Abstain, Reject).
PERMIT, ABSTAIN, REJECT = 1, 0, -1

KeyFn = Callable[[Any], Any]
Victims = list[tuple[JobInfo, PodInfo]]
VictimFn = Callable[[JobInfo, PodInfo, Victims], Victims]


@dataclass
class Tier:
    job_order: list[KeyFn] = field(default_factory=list)
    queue_order: list[KeyFn] = field(default_factory=list)
    task_order: list[KeyFn] = field(default_factory=list)
    preemptable: list[VictimFn] = field(default_factory=list)
    reclaimable: list[VictimFn] = field(default_factory=list)
    job_enqueueable: list[Callable[[JobInfo], int]] = field(default_factory=list)


class RegistrationError(ValueError):
    """A plugin or action registered wrongly: it names no extension point, it
    is registered twice, or it adds at a point it did not register, or what it
    adds does not implement that point."""


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
        actions: Collection[str] = (),
        waiting: Collection[str] = (),
        now: Callable[[], float] = time.time,
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
        self.actions = frozenset(actions)  # the configuration's actions
        self.waiting = frozenset(waiting)  # jobs whose room is held while their victims go
        self.tiers: list[Tier] = []
        self._orders: tuple[list[KeyFn], list[KeyFn], list[KeyFn]] | None = None
        self.job_ready_fns: list[Callable[[JobInfo], bool]] = []
        self.job_valid_fns: list[Callable[[JobInfo], tuple[str, str] | None]] = []
        self.overused_fns: list[Callable[[QueueInfo], bool]] = []
        self.allocatable_fns: list[Callable[[QueueInfo, PodInfo], bool]] = []
        self.preemptive_fns: list[Callable[[QueueInfo, PodInfo], bool]] = []
        self.enqueued_fns: list[Callable[[JobInfo], None]] = []
        self.pipelined_fns: list[Callable[[JobInfo], bool]] = []
        self.outcome = Outcome()
        self.deadline = deadline
        self._clock = clock
        self.now = now  # wall-clock seconds (jobs' creation times are on it)

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

    def extensions(self, plugin: str, points: Collection[Point]) -> Extensions:
        """A new tier's door for one plugin (the caller appends the tier once
        per configuration tier: `open_tier`)."""
        return Extensions(self, self.tiers[-1], plugin, frozenset(points))

    def open_tier(self) -> None:
        self.tiers.append(Tier())
        self._orders = None

    # ---- tiers ------------------------------------------------------------

    def _order_fns(self) -> tuple[list[KeyFn], list[KeyFn], list[KeyFn]]:
        """The order functions of every tier, in tier order (gathered once:
        keys are asked for every job each session and every task placed)."""
        if self._orders is None:
            self._orders = (
                [f for t in self.tiers for f in t.job_order],
                [f for t in self.tiers for f in t.queue_order],
                [f for t in self.tiers for f in t.task_order],
            )
        return self._orders

    def job_key(self, job: JobInfo) -> tuple[Any, ...]:
        return (*[f(job) for f in self._order_fns()[0]], job.created, job.key)

    def queue_key(self, q: QueueInfo) -> tuple[Any, ...]:
        return (*[f(q) for f in self._order_fns()[1]], q.name)

    def task_key(self, task: PodInfo) -> tuple[Any, ...]:
        return (*[f(task) for f in self._order_fns()[2]], task.created, task.key)

    def _victims(
        self, fns: list[VictimFn], preemptor_job: JobInfo, preemptor: PodInfo, candidates: Victims
    ) -> Victims:
        """The candidates every function lets go (none if there is none:
        nothing is evicted without a rule allowing it)."""
        keep: set[str] | None = None
        for f in fns:
            allowed = {p.key for _j, p in f(preemptor_job, preemptor, candidates)}
            keep = allowed if keep is None else keep & allowed
        if not keep:
            return []
        return [(j, p) for j, p in candidates if p.key in keep]

    def preemptable(self, job: JobInfo, task: PodInfo, candidates: Victims) -> Victims:
        return self._victims([f for t in self.tiers for f in t.preemptable], job, task, candidates)

    def reclaimable(self, job: JobInfo, task: PodInfo, candidates: Victims) -> Victims:
        return self._victims([f for t in self.tiers for f in t.reclaimable], job, task, candidates)

    # ---- AND / OR of plugin answers --------------------------------------------

    def job_ready(self, job: JobInfo) -> bool:
        return all(f(job) for f in self.job_ready_fns)

    def job_pipelined(self, job: JobInfo) -> bool:
        return all(f(job) for f in self.pipelined_fns)

    def job_valid(self, job: JobInfo) -> tuple[str, str] | None:
        """None, or the first (reason, message) a plugin gives for the job being invalid."""
        for f in self.job_valid_fns:
            invalid = f(job)
            if invalid is not None:
                return invalid
        return None

    def overused(self, q: QueueInfo) -> bool:
        return any(f(q) for f in self.overused_fns)

    def allocatable(self, q: QueueInfo, task: PodInfo) -> bool:
        return all(f(q, task) for f in self.allocatable_fns)

    def preemptive(self, q: QueueInfo, task: PodInfo) -> bool:
        """Whether the queue may take room back from others for the task."""
        return all(f(q, task) for f in self.preemptive_fns)

    def enqueueable(self, job: JobInfo) -> bool:
        """Volcano's tiers of votes: any REJECT refuses; a tier where some plugin
        says PERMIT (and none REJECT) admits without asking the next tiers."""
        for tier in self.tiers:
            permit = False
            for f in tier.job_enqueueable:
                vote = f(job)
                if vote < 0:
                    return False
                permit = permit or vote > 0
            if permit:
                return True
        return True

    def enqueued(self, job: JobInfo) -> None:
        """The job is enqueued: each plugin counts it (its minResources now held)."""
        for f in self.enqueued_fns:
            f(job)

    def statement(self) -> Statement:
        return Statement(self.cache, self.framework, self.queues, self.outcome)


class Extensions:
    """What one plugin may add to a session: a method per extension point,
    each refused (`RegistrationError`) for a point the plugin did not register."""

    def __init__(self, ssn: Session, tier: Tier, plugin: str, points: frozenset[Point]) -> None:
        self.session = ssn
        self._tier = tier
        self._plugin = plugin
        self._points = points

    def _at(self, point: Point) -> None:
        if point not in self._points:
            raise RegistrationError(
                f"plugin {self._plugin!r} adds a {point.value} function but registered "
                f"only {', '.join(sorted(p.value for p in self._points))}"
            )

    def job_order(self, fn: Callable[[JobInfo], Any]) -> None:
        self._at(Point.JOB_ORDER)
        self._tier.job_order.append(fn)
        self.session._orders = None

    def queue_order(self, fn: Callable[[QueueInfo], Any]) -> None:
        self._at(Point.QUEUE_ORDER)
        self._tier.queue_order.append(fn)
        self.session._orders = None

    def task_order(self, fn: Callable[[PodInfo], Any]) -> None:
        self._at(Point.TASK_ORDER)
        self._tier.task_order.append(fn)
        self.session._orders = None

    def preemptable(self, fn: VictimFn) -> None:
        self._at(Point.PREEMPTABLE)
        self._tier.preemptable.append(fn)

    def reclaimable(self, fn: VictimFn) -> None:
        self._at(Point.RECLAIMABLE)
        self._tier.reclaimable.append(fn)

    def job_ready(self, fn: Callable[[JobInfo], bool]) -> None:
        self._at(Point.JOB_READY)
        self.session.job_ready_fns.append(fn)

    def job_pipelined(self, fn: Callable[[JobInfo], bool]) -> None:
        self._at(Point.JOB_PIPELINED)
        self.session.pipelined_fns.append(fn)

    def job_valid(self, fn: Callable[[JobInfo], tuple[str, str] | None]) -> None:
        self._at(Point.JOB_VALID)
        self.session.job_valid_fns.append(fn)

    def job_enqueueable(self, fn: Callable[[JobInfo], int]) -> None:
        """`fn` votes PERMIT, ABSTAIN or REJECT."""
        self._at(Point.JOB_ENQUEUEABLE)
        self._tier.job_enqueueable.append(fn)

    def job_enqueued(self, fn: Callable[[JobInfo], None]) -> None:
        self._at(Point.JOB_ENQUEUED)
        self.session.enqueued_fns.append(fn)

    def overused(self, fn: Callable[[QueueInfo], bool]) -> None:
        self._at(Point.OVERUSED)
        self.session.overused_fns.append(fn)

    def allocatable(self, fn: Callable[[QueueInfo, PodInfo], bool]) -> None:
        self._at(Point.ALLOCATABLE)
        self.session.allocatable_fns.append(fn)

    def preemptive(self, fn: Callable[[QueueInfo, PodInfo], bool]) -> None:
        self._at(Point.PREEMPTIVE)
        self.session.preemptive_fns.append(fn)
