"""A `Statement`: the placements and evictions of one gang, committed or discarded together.

Placing a task assumes it in the scheduler's cache, so that the next task
sees it; evicting one takes it off its node for the session. A statement
committed turns its placements into binds and its evictions into deletions
(written after the session, from its `Outcome`); discarded, it puts
everything back as it was. This is how a gang is all-or-nothing (Volcano's
framework/statement.go).

A placement may carry the cycle state its filters and Reserve left (the
volume plugins' plans): discarded, it is unreserved; committed, it goes with
the bind, whose PreBind needs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controlplane.scheduler.batch.info import JobInfo, QueueInfo, add, req
from controlplane.scheduler.cache import Cache
from controlplane.scheduler.framework import Framework
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import CycleState

Obj = dict[str, Any]


@dataclass(frozen=True)
class Eviction:
    pod: PodInfo
    reason: str  # the action's: preempt, reclaim
    group: Obj  # the victim's PodGroup


@dataclass
class Outcome:
    """What a session decided, written once it ends."""

    binds: list[tuple[PodInfo, str]] = field(default_factory=list)
    bind_states: dict[str, CycleState] = field(default_factory=dict)  # pod key -> cycle state
    evictions: list[Eviction] = field(default_factory=list)
    # Jobs waiting for room being freed for them, their tasks placed there
    # until the session ends (never bound in this session).
    pipelined: list[tuple[JobInfo, Statement]] = field(default_factory=list)
    # Jobs whose pods a statement placed or evicted (even if discarded since).
    touched: set[str] = field(default_factory=set)
    enqueued: list[JobInfo] = field(default_factory=list)


class Statement:
    def __init__(
        self, cache: Cache, framework: Framework, queues: dict[str, QueueInfo], outcome: Outcome
    ) -> None:
        self.cache = cache
        self.framework = framework
        self.queues = queues
        self.outcome = outcome
        self.placed: list[tuple[JobInfo, PodInfo, str]] = []
        self.evicted: list[tuple[JobInfo, PodInfo, str]] = []
        self.reasons: dict[str, str] = {}  # victim key -> why it is evicted
        self.states: dict[str, CycleState] = {}

    def _account(self, job: JobInfo, p: PodInfo, sign: int) -> None:
        r = req(p)
        add(job.allocated, r, sign)
        add(self.queues[job.queue].allocated, r, sign)

    def allocate(
        self, job: JobInfo, task: PodInfo, node: str, state: CycleState | None = None
    ) -> None:
        if state is not None:
            self.states[task.key] = state
        self.cache.assume_pod(task, node)
        self.outcome.touched.add(job.key)
        job.pending.remove(task)
        job.placed[task.key] = task
        job.place(task, 1)
        job.best_effort -= task.best_effort
        self._account(job, task, 1)
        self.placed.append((job, task, node))

    def evict(self, job: JobInfo, victim: PodInfo, reason: str) -> None:
        self.reasons[victim.key] = reason
        node = self.cache.node_of(victim.key) or ""
        info = self.cache.nodes.get(node)
        if info is not None:
            self.cache._unplace(victim, info)
        self.outcome.touched.add(job.key)
        if job.placed.pop(victim.key, None) is not None:
            job.place(victim, -1)
        self._account(job, victim, -1)
        self.evicted.append((job, victim, node))

    def undo_evict(self, job: JobInfo, victim: PodInfo, node: str) -> None:
        """Put back one victim evicted in this statement."""
        self.evicted.remove((job, victim, node))
        self._put_back(job, victim, node)

    def _put_back(self, job: JobInfo, victim: PodInfo, node: str) -> None:
        info = self.cache.nodes.get(node)
        if info is not None and victim.key not in info.pods:
            self.cache._place(victim, info)
        if victim.key not in job.placed:
            job.placed[victim.key] = victim
            job.place(victim, 1)
        self._account(job, victim, 1)

    def discard(self) -> None:
        for _job, task, node in reversed(self.placed):
            state = self.states.pop(task.key, None)
            if state is not None:
                self.framework.run_unreserve(state, task, node)
        for job, task, _node in reversed(self.placed):
            self.cache.forget_pod(task.key)
            if job.placed.pop(task.key, None) is not None:
                job.place(task, -1)
            job.pending.append(task)
            job.best_effort += task.best_effort
            self._account(job, task, -1)
        for job, victim, node in reversed(self.evicted):
            self._put_back(job, victim, node)
        self.evicted = []
        self.placed = []

    def commit(self) -> None:
        """The placements become binds, the evictions deletions (after the session)."""
        self.outcome.binds.extend((task, node) for _job, task, node in self.placed)
        self.outcome.bind_states.update(self.states)
        self._evictions()
        self.states = {}
        self.placed = []
        self.evicted = []

    def commit_evictions(self, job: JobInfo) -> None:
        """Evict the victims but bind nobody yet: the preemptor's tasks stay placed
        for the rest of the session (Volcano's pipelined tasks), so that the room
        is not given to anyone else nor its victims chosen again; the scheduler
        discards the statement when the session ends and holds the room for the
        job until its victims are gone."""
        self._evictions()
        self.outcome.pipelined.append((job, self))

    def _evictions(self) -> None:
        self.outcome.evictions.extend(
            Eviction(v, self.reasons.get(v.key, ""), j.group) for j, v, _n in self.evicted
        )
