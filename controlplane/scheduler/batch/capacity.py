"""Volcano's capacity plugin: queues by their own deserved, capability and guarantee, in a hierarchy.

Where proportion shares the cluster by weight, capacity takes each queue's
shares from its spec: `deserved` (what it may keep when others want room:
reclaim takes back above it), `capability` (what it may never exceed; the
cluster when unset) and `guarantee` (never reclaimed below). With
`enableHierarchy` the queues form a tree by `spec.parent` (none or `root`:
top level): a queue's allocated and inqueue resources count in each of its
ancestors, a task or job must fit the capability of the queue and of every
ancestor, and only leaf queues take jobs (a queue with children is refused,
as Volcano's capacity plugin refuses them).

It registers: queue order (allocated over deserved, lowest first),
allocatable, enqueueable (REJECT above capability, PERMIT otherwise) and
enqueued, reclaimable (victims from other queues above their deserved, not
below their guarantee) and preemptive (a queue may reclaim for a task while
it stays within its deserved in some dimension the task asks).
"""

from __future__ import annotations

from controlplane.scheduler.batch.conf import PluginOption
from controlplane.scheduler.batch.info import (
    DIMS,
    QUEUE_QUOTA,
    JobInfo,
    QueueInfo,
    Res,
    add,
    le,
    req,
)
from controlplane.scheduler.batch.queueshare import over_deserved, share
from controlplane.scheduler.batch.session import PERMIT, REJECT, Extensions, Victims
from controlplane.scheduler.podinfo import PodInfo


def ancestors(queues: dict[str, QueueInfo], name: str) -> list[str]:
    """The queue's parents, nearest first (a cycle or a missing parent ends the line)."""
    out: list[str] = []
    q = queues.get(name)
    while q is not None and q.parent and q.parent not in out and q.parent != name:
        out.append(q.parent)
        q = queues.get(q.parent)
    return out


def capacity(ext: Extensions, opt: PluginOption) -> None:
    ssn = ext.session
    queues = ssn.queues
    hierarchy = opt.switches.get("enableHierarchy", False)
    parents = {q.parent for q in queues.values() if q.parent} if hierarchy else set()
    lines = {n: ([n, *ancestors(queues, n)] if hierarchy else [n]) for n in queues}
    # Per queue: capability (the cluster's when unset), and the queues whose
    # allocated and inqueue resources count in it (itself and its descendants).
    cap = {n: dict(q.capability) if q.capability else dict(ssn.total) for n, q in queues.items()}
    under: dict[str, list[QueueInfo]] = {n: [] for n in queues}
    for n, q in queues.items():
        q.deserved = dict(q.spec_deserved) if q.spec_deserved is not None else dict(cap[n])
        for up in lines[n]:
            if up in under:
                under[up].append(q)

    def leaf(name: str) -> bool:
        return name not in parents

    def fits(name: str, extra: Res, with_inqueue: bool = False) -> bool:
        """`extra` more fits the capability of the queue and of each ancestor."""
        dims = [d for d in DIMS if extra.get(d)]
        for up in lines[name]:
            if up not in cap:
                continue
            future = dict(extra)
            for q in under[up]:  # their allocated moves with the session's statements
                add(future, q.allocated)
                if with_inqueue:
                    add(future, q.inqueue)
            if not le(future, cap[up], dims):
                return False
        return True

    def allocatable(q: QueueInfo, task: PodInfo) -> bool:
        return q.state == "Open" and leaf(q.name) and fits(q.name, req(task))

    def enqueueable(job: JobInfo) -> int:
        q = queues.get(job.queue)
        if q is None or q.state != "Open" or not leaf(job.queue):
            return REJECT
        if fits(job.queue, job.min_resources, with_inqueue=True):
            return PERMIT
        job.enqueue_refusal = QUEUE_QUOTA
        return REJECT

    def enqueued(job: JobInfo) -> None:
        q = queues.get(job.queue)
        if q is not None:
            add(q.inqueue, job.min_resources)

    def reclaimable(job: JobInfo, task: PodInfo, cands: Victims) -> Victims:
        return over_deserved(queues, job, cands)

    def preemptive(q: QueueInfo, task: PodInfo) -> bool:
        r = req(task)
        future = dict(q.allocated)
        add(future, r)
        return q.state == "Open" and any(
            future.get(d, 0) <= q.deserved.get(d, 0) for d in DIMS if r.get(d)
        )

    if opt.enabled("enableQueueOrder"):
        ext.queue_order(lambda q: share(q.allocated, q.deserved))
    if opt.enabled("enableAllocatable"):
        ext.allocatable(allocatable)
    if opt.enabled("enableJobEnqueued"):
        ext.job_enqueueable(enqueueable)
        ext.job_enqueued(enqueued)
    if opt.enabled("enableReclaimable"):
        ext.reclaimable(reclaimable)
    if opt.enabled("enablePreemptive"):
        ext.preemptive(preemptive)
