"""The session driver: open a session over the cache's snapshot, run the actions, close it.

Volcano's runOnce: `open` takes the snapshot (the jobs a session may act
on and those whose status is due, the queues, the cluster's allocatable),
lets each plugin of the configuration add its functions tier by tier, then
places again the tasks of jobs whose room is being freed (below); the
actions run in the configuration's order within the session's budget
(counted from the session's start, the snapshot's time included, so that
a session whose snapshot was long, the first over many new groups, places
fewer pods rather than lasting longer; the first job in line is always
tried, so that every session makes progress);
`close` hands the decisions on (the binds and evictions to write), marks
the groups the session touched as changed, and gives every job that is not
ready the gang's message (as gang's OnSessionClose does).

Room freed for a preemptor is its own (Volcano's pipelined tasks): while
some of its victims still terminate, its tasks are placed there for the
session (not bound) and it does not preempt again; once all are gone they
are bound there. A hold that no longer fits is dropped (the job may preempt
again). Holds live between sessions, here.
"""

from __future__ import annotations

from dataclasses import dataclass

from controlplane.scheduler.batch import actions
from controlplane.scheduler.batch.cache import BatchCache
from controlplane.scheduler.batch.conf import Conf
from controlplane.scheduler.batch.info import NOT_ENOUGH_RESOURCES, gang_message
from controlplane.scheduler.batch.registry import Registry
from controlplane.scheduler.batch.session import Session
from controlplane.scheduler.framework import Framework
from machinery.clock import Clock


@dataclass
class _Hold:
    victims: dict[str, str]  # pod key -> uid
    placements: list[tuple[str, str]]  # (task key, node)


class SessionDriver:
    def __init__(
        self,
        conf: Conf,
        registry: Registry,
        cache: BatchCache,
        framework: Framework,
        clock: Clock,
        budget: float,
    ) -> None:
        self.conf = registry.check(conf)
        self.registry = registry
        self.cache = cache
        self.framework = framework
        self.clock = clock
        self.budget = budget  # seconds from a session's start its actions may place pods until
        # Per job, the victims evicted for it (by UID: a Volcano Job re-creates
        # them under the same names) and where its tasks go once they are gone.
        self.evicted_for: dict[str, _Hold] = {}

    def run(self, want: set[str]) -> tuple[Session, int]:
        """One session (under the cache's lock) and the pods pending when it began."""
        cache = self.cache
        deadline = self.clock.monotonic() + self.budget
        cache.expire_assumed()
        jobs, queues, total = cache.snapshots.take(want)
        pending = sum(len(j.pending) for j in jobs.values())
        ssn = Session(
            cache.cluster, self.framework, jobs, queues, total,
            deadline=deadline, clock=self.clock.monotonic,
            more=cache.snapshots.more, actions=self.conf.actions, now=self.clock.now,
        )  # fmt: skip
        self.registry.open_session(ssn, self.conf)
        self._hold_room(ssn)
        ssn.waiting = frozenset(self.evicted_for)
        self.registry.run_actions(ssn, self.conf)
        self._close(ssn)
        return ssn, pending

    def _hold_room(self, ssn: Session) -> None:
        for key, hold in list(self.evicted_for.items()):
            job = ssn.all_jobs().get(key)
            if job is None:
                del self.evicted_for[key]
                continue
            left = [
                p
                for k, uid in hold.victims.items()
                if (p := self.cache.placed_pod(k, uid)) is not None
            ]
            stmt = actions.pipeline(ssn, job, left, hold.placements)
            if stmt is None:
                del self.evicted_for[key]
            elif left:
                ssn.outcome.pipelined.append((job, stmt))
            else:
                stmt.commit()
                del self.evicted_for[key]

    def _close(self, ssn: Session) -> None:
        out = ssn.outcome
        self.cache.bound([p.key for p, _node in out.binds])
        for job, stmt in reversed(out.pipelined):
            self.evicted_for[job.key] = _Hold(
                {v.key: v.uid for _j, v, _n in stmt.evicted},
                [(t.key, n) for _j, t, n in stmt.placed],
            )
            stmt.discard()
        for key in out.touched:
            self.cache.changed(key)
        if not ssn.out_of_time():
            # gang's session close: a job with tasks that is not ready says why,
            # even if no action got to it (its queue overused, say).
            for job in ssn.jobs.values():
                has_tasks = job.placed or job.pending or job.succeeded or job.failed
                if not job.unschedulable and has_tasks and not ssn.job_ready(job):
                    job.unschedulable_reason = NOT_ENOUGH_RESOURCES
                    job.unschedulable = gang_message(job)
