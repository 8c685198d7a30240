"""The batch scheduler's actions, run in the configured order each session.

Each is `action(session)`, registered by name (builtin.py); what the
configuration enables is `session.actions`.

- enqueue: a Pending PodGroup becomes Inqueue when the plugins' votes admit
  it (queue capability, cluster overcommit, sla), pods or not.
- allocate: queues by share, then jobs by the plugins' order; a job's
  pending tasks are placed through one Statement (filters and scores of the
  Framework, each placement assumed in the cache so the next task sees it);
  committed when the job is ready (gang), discarded otherwise. A ready job
  with tasks left goes back in line after each task, so the job order
  (DRF's dominant shares) interleaves elastic jobs.
- preempt: inside a queue, a starving job takes the room of lower-ranked
  jobs' tasks (plugins' `preemptable`), node by node; the victims are
  evicted only if the whole gang fits afterwards, and the gang waits for them
  to go (nothing is bound on top of a terminating pod), its room held for it
  (`pipeline`: its tasks placed there each session, not bound).
- reclaim: the same across queues: a queue below its deserved share takes
  back from reclaimable queues above theirs (plugins' `reclaimable`).
- backfill: best-effort tasks (no requests) go wherever the filters allow.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

import numpy as np

from controlplane.scheduler.batch.info import (
    NOT_ENOUGH_RESOURCES,
    QUEUE_QUOTA,
    JobInfo,
    gang_message,
)
from controlplane.scheduler.batch.session import Session, Victims
from controlplane.scheduler.batch.statement import Statement
from controlplane.scheduler.framework import FitError
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import CycleState

RUNNABLE = ("Inqueue", "Running")


def _schedulable_jobs(ssn: Session, enqueue: bool) -> list[JobInfo]:
    out = []
    for job in ssn.jobs.values():
        if job.phase == "Pending" and enqueue:
            continue
        if len(job.pending) <= job.best_effort:  # nothing but best-effort pods wait
            continue
        invalid = ssn.job_valid(job)
        if invalid is not None:
            job.unschedulable_reason, job.unschedulable = invalid
            continue
        out.append(job)
    return out


def _round_robin(ssn: Session, jobs: list[JobInfo]) -> list[JobInfo]:
    """Jobs in the order enqueue considers them: one at a time from the queue
    that has taken the fewest for its weight, each queue's in job order."""
    by_queue: dict[str, list[JobInfo]] = {}
    for j in sorted(jobs, key=ssn.job_key, reverse=True):
        by_queue.setdefault(j.queue, []).append(j)
    taken: dict[str, int] = {}
    out = []
    while by_queue:
        name = min(by_queue, key=lambda n: (taken.get(n, 0) / max(ssn.queues[n].weight, 1), n))
        out.append(by_queue[name].pop())
        taken[name] = taken.get(name, 0) + 1
        if not by_queue[name]:
            del by_queue[name]
    return out


def enqueue(ssn: Session) -> None:
    jobs = _round_robin(ssn, [j for j in ssn.jobs.values() if j.phase == "Pending"])
    for job in jobs:
        # Whether it has its pods yet does not matter: a PodGroup made before
        # its pods is enqueued too (Volcano's enqueue asks no validity).
        if not job.min_resources or ssn.enqueueable(job):
            job.phase = "Inqueue"
            ssn.enqueued(job)
            ssn.outcome.enqueued.append(job)
        elif not job.unschedulable:
            job.unschedulable_reason = NOT_ENOUGH_RESOURCES
            job.unschedulable = gang_message(job, origin=job.enqueue_refusal or QUEUE_QUOTA)


def _place(ssn: Session, stmt: Statement, job: JobInfo, task: PodInfo) -> str:
    """Place one task through the statement; '' or why it fits nowhere."""
    state = CycleState()
    try:
        result = ssn.placer.schedule(state, task)
    except FitError as e:
        return str(e)
    if not ssn.allocatable(ssn.queues[job.queue], task):
        return f"queue {job.queue} has no room left within its deserved share"
    reason = _reserve(ssn, state, task, result.node)
    if not reason:
        stmt.allocate(job, task, result.node, state)
    return reason


def _reserve(ssn: Session, state: CycleState, task: PodInfo, node: str) -> str:
    """Reserve (the volume plugins assume the node's volumes); '' or why not."""
    st = ssn.framework.run_reserve(state, task, node)
    return "" if st.ok else "; ".join(st.reasons) or f"reserve on {node} failed"


def allocate(ssn: Session) -> None:
    by_queue: dict[str, list[tuple[tuple[Any, ...], JobInfo]]] = {}
    for job in _schedulable_jobs(ssn, "enqueue" in ssn.actions):
        if job.queue in ssn.queues:
            by_queue.setdefault(job.queue, []).append((ssn.job_key(job), job))
    for line in by_queue.values():
        heapq.heapify(line)
    tried = False  # the first job in line is tried whatever the time: progress each session
    while by_queue and not (tried and ssn.out_of_time()):
        name = min(by_queue, key=lambda n: ssn.queue_key(ssn.queues[n]))
        q = ssn.queues[name]
        line = by_queue[name]
        if ssn.overused(q) or not line:
            del by_queue[name]
            continue
        _, job = heapq.heappop(line)
        tried = True
        if _allocate_job(ssn, job):
            heapq.heappush(line, (ssn.job_key(job), job))
        if not line:
            del by_queue[name]


def _allocate_job(ssn: Session, job: JobInfo) -> bool:
    """Place the job's pending tasks through one statement, committed if the
    job is ready. Once it is ready with tasks left, it stops after each task
    and says so (True): it goes back in line, so that the job order is asked
    again (DRF's shares have moved), as Volcano's allocate does. Otherwise
    the oldest of two elastic jobs would take all the room."""
    stmt = ssn.statement()
    origin = ""
    tasks = sorted((t for t in job.pending if not t.best_effort), key=ssn.task_key)
    again = False
    for i, task in enumerate(tasks):
        reason = _place(ssn, stmt, job, task)
        if reason:
            origin = f"{task.key.split('/', 1)[1]}: {reason}"
            break
        if i + 1 < len(tasks) and len(job.placed) >= job.min_member and ssn.job_ready(job):
            again = True
            break
    if ssn.job_ready(job):
        stmt.commit()
        job.unschedulable = job.unschedulable_reason = ""
    else:
        tentative = len(stmt.placed)
        stmt.discard()
        job.unschedulable_reason = NOT_ENOUGH_RESOURCES
        job.unschedulable = gang_message(job, tentative, origin)
    return again


def backfill(ssn: Session) -> None:
    wanting = [
        j
        for j in ssn.jobs.values()
        if j.best_effort and not (j.phase == "Pending" and "enqueue" in ssn.actions)
    ]
    for job in sorted(wanting, key=ssn.job_key):
        for task in [t for t in job.pending if t.best_effort]:
            stmt = ssn.statement()
            if not _place(ssn, stmt, job, task):
                stmt.commit()


# ---- preempt and reclaim ------------------------------------------------------


def _fits_on(ssn: Session, task: PodInfo, slot: int) -> CycleState | None:
    """The filters' cycle state when `task` fits the node in `slot`, else None."""
    fw, cache = ssn.framework, ssn.cache
    state = CycleState()
    if not fw.run_pre_filter(state, task, cache).ok:
        return None
    if len(fw.run_filters(state, task, cache, np.array([slot], np.intp), None)) != 1:
        return None
    return state


VictimFilter = Callable[[JobInfo, PodInfo, Victims], Victims]


def _make_room(
    ssn: Session,
    stmt: Statement,
    job: JobInfo,
    task: PodInfo,
    candidate: Candidate,
    select: VictimFilter,
    reason: str,
) -> bool:
    """Evict (in the statement) the fewest lowest-ranked victims on one node so
    that `task` fits there, and place it; False when no node can be freed."""
    owner = ssn.owner()
    for info in list(ssn.cache.nodes.values()):
        cands = [
            (owner[k], p)
            for k, p in info.pods.items()
            if k in owner
            and owner[k] is not job
            and candidate(ssn, job, owner[k])
            and not (p.pod.get("metadata") or {}).get("deletionTimestamp")
            and not ssn.cache.is_assumed(k)
        ]
        if not cands:
            continue
        pool = select(job, task, cands)
        taken: Victims = []
        while pool:
            # Lowest priority first; among equals, from the job with most to spare.
            vj, v = min(
                pool,
                key=lambda jv: (
                    jv[1].priority,
                    jv[0].min_member - len(jv[0].placed),
                    -jv[1].created,
                ),
            )
            pool.remove((vj, v))
            stmt.evict(vj, v, reason)
            taken.append((vj, v))
            state = _fits_on(ssn, task, info.slot)
            if state is not None and not _reserve(ssn, state, task, info.name):
                stmt.allocate(job, task, info.name, state)
                return True
        # Not enough here: put this node's victims back.
        for vj, v in reversed(taken):
            stmt.undo_evict(vj, v, info.name)
    return False


Candidate = Callable[[Session, JobInfo, JobInfo], bool]


def pipeline(
    ssn: Session,
    job: JobInfo,
    victims: list[PodInfo],
    placements: list[tuple[str, str]],
) -> Statement | None:
    """Place `job`'s tasks again where room was freed for them, taking its
    victims still terminating out of the way (in the statement returned, which
    the caller commits or keeps pipelined); None when that no longer fits."""
    stmt = ssn.statement()
    owner = ssn.owner() if victims else {}
    for v in victims:
        vj = owner.get(v.key)
        if vj is None:
            stmt.discard()
            return None
        stmt.evict(vj, v, "preempt")
    pending = {t.key: t for t in job.pending}
    for key, node in placements:
        task, info = pending.get(key), ssn.cache.nodes.get(node)
        state = _fits_on(ssn, task, info.slot) if task and info else None
        if task is None or state is None or _reserve(ssn, state, task, node):
            stmt.discard()
            return None
        stmt.allocate(job, task, node, state)
    return stmt


def _same_queue(ssn: Session, job: JobInfo, victim: JobInfo) -> bool:
    return victim.queue == job.queue


def _reclaimable_queue(ssn: Session, job: JobInfo, victim: JobInfo) -> bool:
    return victim.queue != job.queue and ssn.queues[victim.queue].reclaimable


def _starving(job: JobInfo) -> bool:
    """Fewer than minAvailable tasks placed (Volcano's gang JobStarving: the
    tasks' own minimums do not count when preempting)."""
    return job.ready_num() < job.min_member


def _wanting(ssn: Session, ready_too: bool = False) -> list[JobInfo]:
    """Jobs that want room: starving (preempt), or with any task pending (reclaim:
    a queue below its deserved share takes back task by task)."""
    return sorted(
        (
            j
            for j in _schedulable_jobs(ssn, "enqueue" in ssn.actions)
            if (ready_too or _starving(j)) and j.key not in ssn.waiting
        ),
        key=ssn.job_key,
    )


def _take(
    ssn: Session,
    job: JobInfo,
    candidate: Candidate,
    select: VictimFilter,
    reason: str,
    until_ready: bool = True,
) -> None:
    stmt = ssn.statement()
    q = ssn.queues[job.queue]
    for task in sorted((t for t in job.pending if not t.best_effort), key=ssn.task_key):
        if until_ready and not _starving(job) and ssn.job_ready(job):
            break
        if not until_ready and not (ssn.allocatable(q, task) and ssn.preemptive(q, task)):
            break  # reclaim: the queue's deserved share is reached, nothing beyond it
        placed = not _place(ssn, stmt, job, task)
        if not placed and not _make_room(ssn, stmt, job, task, candidate, select, reason):
            break
    if ssn.job_ready(job) and stmt.evicted:
        stmt.commit_evictions(job)  # the gang binds once its room is free
    elif ssn.job_ready(job):
        stmt.commit()
    else:
        stmt.discard()  # never evict for a gang that would still not fit


def preempt(ssn: Session) -> None:
    for job in _wanting(ssn):
        if ssn.out_of_time():
            return
        _take(ssn, job, _same_queue, ssn.preemptable, "preempt")


def reclaim(ssn: Session) -> None:
    for job in _wanting(ssn, ready_too=True):
        if ssn.out_of_time():
            return
        q = ssn.queues[job.queue]
        if ssn.overused(q):
            continue
        _take(ssn, job, _reclaimable_queue, ssn.reclaimable, "reclaim", until_ready=False)
