"""The batch scheduler's plugins: what each adds to a session (or to its Framework).

Each is registered by name with its extension points (builtin.py); when a
session opens it adds its functions through `Extensions` (session.py), one
method per point. Volcano's semantics, our code:

- priority: jobs and tasks by priority (higher first); a preemptor may only
  evict tasks of lower priority (inside its own job: of lower task priority).
- gang: Volcano's JobInfo checks. A job is valid with at least minMember
  pods, ready with minMember placed (or succeeded, or pending best-effort);
  each task's minTaskMember counts only where minMember covers their sum (a
  job of minAvailable 2 over tasks of 16 replicas is elastic: 2 will do).
  Not-ready jobs go first; victims only from a job's pods above minMember.
- conformance: never evicts kube-system pods nor the system-* priority classes.
- drf: jobs by dominant resource share (lowest first); a victim's job must keep
  a larger share than the preemptor's job gets.
- proportion: each queue's deserved share of the cluster by weight (water
  filling, capped by capability and by what it asks, at least its guarantee);
  queues by share of deserved; an overused queue gets nothing; a task fits its
  queue only within deserved; victims only from reclaimable queues over
  their deserved share in a dimension the victim requests (never below
  their guarantee); a job is enqueued
  only into an Open queue, within its capability (not its deserved share:
  the overcommit plugin keeps the cluster's room, as in Volcano).
- overcommit: a job is enqueued while the cluster's allocatable times
  `overcommit-factor` (1.2) covers what is placed and inqueue plus its
  minResources, or when it outranks a job placed in its own queue and
  preempt runs (its room comes from that queue).
- sla: jobs by the end of their sla-waiting-time; one past it is enqueued
  whatever the next tiers say (enqueue votes go tier by tier, session.py).
- capacity (capacity.py): queues by their own deserved and capability,
  in a hierarchy with enableHierarchy.
- predicates, nodeorder, binpack: the filters and scores, run through the
  Framework: they add them when it is built (nodeplugins.py), nodeorder
  with Volcano's weight arguments.
"""

from __future__ import annotations

from controlplane.scheduler import names
from controlplane.scheduler.batch import binpack as binpack_score
from controlplane.scheduler.batch.conf import PluginOption, parse_duration
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
from controlplane.scheduler.batch.nodeplugins import DEFAULT_WEIGHTS, FILTERS, SCORES, NodeAdder
from controlplane.scheduler.batch.queueshare import over_deserved, share
from controlplane.scheduler.batch.session import ABSTAIN, PERMIT, REJECT, Extensions, Victims
from controlplane.scheduler.podinfo import PodInfo

SYSTEM_CLASSES = ("system-cluster-critical", "system-node-critical")
SLA_WAITING_TIME = "sla-waiting-time"  # sla's argument (a PodGroup's annotation: snapshot.py)
# Volcano's PodGroup condition reasons (scheduling/v1beta1).
NOT_ENOUGH_PODS = "NotEnoughTasks"
NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"
INVALID_TASKS = "Not enough valid pods of each task for gang-scheduling"


def priority(ext: Extensions, opt: PluginOption) -> None:
    if opt.enabled("enableJobOrder"):
        ext.job_order(lambda j: -j.priority)
    if opt.enabled("enableTaskOrder"):
        ext.task_order(lambda t: -t.priority)

    def victims(job: JobInfo, task: PodInfo, cands: Victims) -> Victims:
        out = []
        for vj, v in cands:
            if vj is job:
                if v.priority < task.priority:
                    out.append((vj, v))
            elif vj.priority < job.priority:
                out.append((vj, v))
        return out

    if opt.enabled("enablePreemptable"):
        ext.preemptable(victims)


def tasks_ready(job: JobInfo) -> bool:
    """Each task has its minimum placed (Volcano's CheckTaskReady): checked
    only where the job's minAvailable covers the tasks' minimums."""
    if not job.tasks_checked():
        return True
    return all(job.task_ready(t) >= n for t, n in job.min_task_member.items())


def ready(job: JobInfo) -> bool:
    """minAvailable tasks placed (or done), and each task's minimum where it counts."""
    return job.ready_num() >= job.min_member and tasks_ready(job)


def invalid(job: JobInfo) -> tuple[str, str] | None:
    """Why the job cannot be gang-scheduled at all (Volcano's gang JobValid):
    a task with fewer pods than its minimum, or fewer pods than minAvailable."""
    if not job.valid_tasks:  # counted when the snapshot built the job
        return NOT_ENOUGH_PODS_OF_TASK, INVALID_TASKS
    n = len(job.placed) + len(job.pending) + job.done
    if n < job.min_member:
        return NOT_ENOUGH_PODS, (
            f"Not enough valid tasks for gang-scheduling, valid: {n}, min: {job.min_member}"
        )
    return None


def gang(ext: Extensions, opt: PluginOption) -> None:
    ext.job_valid(invalid)
    if opt.enabled("enableJobReady"):
        ext.job_ready(ready)
    if opt.enabled("enableJobPipelined"):
        ext.job_pipelined(ready)
    if opt.enabled("enableJobOrder"):
        ext.job_order(lambda j: 1 if j.ready_num() >= j.min_member else 0)

    def surplus(job: JobInfo, task: PodInfo, cands: Victims) -> Victims:
        """Victims only from a job's pods above its minAvailable (Volcano's
        gang preemptable: ready tasks > minAvailable)."""
        occupied: dict[str, int] = {}
        out = []
        for vj, v in cands:
            n = occupied.setdefault(vj.key, len(vj.placed) + vj.done)
            if n > vj.min_member:
                occupied[vj.key] = n - 1
                out.append((vj, v))
        return out

    if opt.enabled("enablePreemptable"):
        ext.preemptable(surplus)
    if opt.enabled("enableReclaimable"):
        ext.reclaimable(surplus)


def conformance(ext: Extensions, opt: PluginOption) -> None:
    def allowed(job: JobInfo, task: PodInfo, cands: Victims) -> Victims:
        return [
            (vj, v)
            for vj, v in cands
            if v.namespace != "kube-system"
            and (v.pod.get("spec") or {}).get("priorityClassName") not in SYSTEM_CLASSES
        ]

    if opt.enabled("enablePreemptable"):
        ext.preemptable(allowed)
    if opt.enabled("enableReclaimable"):
        ext.reclaimable(allowed)


def drf(ext: Extensions, opt: PluginOption) -> None:
    total = ext.session.total
    if opt.enabled("enableJobOrder"):
        ext.job_order(lambda j: share(j.allocated, total))

    def fairer(job: JobInfo, task: PodInfo, cands: Victims) -> Victims:
        mine = dict(job.allocated)
        add(mine, req(task))
        ls = share(mine, total)
        out = []
        for vj, v in cands:
            theirs = dict(vj.allocated)
            add(theirs, req(v), -1)
            if ls < share(theirs, total) or vj is job:
                out.append((vj, v))
        return out

    if opt.enabled("enablePreemptable"):
        ext.preemptable(fairer)


def deserved_shares(queues: dict[str, QueueInfo], total: Res) -> None:
    """Water-filling by weight: each round gives every unmet queue its weight's
    part of what remains, capped by capability and by its request."""
    for q in queues.values():
        q.deserved = {d: 0 for d in DIMS}
    remaining = {d: total.get(d, 0) for d in DIMS}
    unmet = {n for n, q in queues.items() if q.state == "Open" or q.allocated}
    for _ in range(16):
        weight = sum(queues[n].weight for n in unmet)
        if not weight or all(v <= 0 for v in remaining.values()):
            break
        given = {d: 0 for d in DIMS}
        for n in sorted(unmet):
            q = queues[n]
            for d in DIMS:
                want = q.deserved[d] + remaining[d] * q.weight // weight
                cap = q.capability.get(d) if q.capability else None
                if cap is not None:
                    want = min(want, cap)
                want = min(want, q.request.get(d, 0))
                given[d] += max(want - q.deserved[d], 0)
                q.deserved[d] = max(want, q.deserved[d])
            if le(q.request, q.deserved) or (
                q.capability is not None and le(q.capability, q.deserved, q.capability)
            ):
                unmet.discard(n)
        if not any(given.values()):
            break
        for d in DIMS:
            remaining[d] -= given[d]
    for q in queues.values():
        for d, v in q.guarantee.items():
            if d in q.deserved:
                q.deserved[d] = max(q.deserved[d], v)


def proportion(ext: Extensions, opt: PluginOption) -> None:
    ssn = ext.session
    deserved_shares(ssn.queues, ssn.total)
    if opt.enabled("enableQueueOrder"):
        ext.queue_order(lambda q: share(q.allocated, q.deserved))

    def overused(q: QueueInfo) -> bool:
        return le(q.deserved, q.allocated)

    def allocatable(q: QueueInfo, task: PodInfo) -> bool:
        """Within deserved, once the task is added, in each dimension it requests
        (asked for every task placed: no dicts made)."""
        alloc, deserved = q.allocated, q.deserved
        return all(alloc.get(d, 0) + v <= deserved.get(d, 0) for d, v in req(task).items() if v)

    def reclaim(job: JobInfo, task: PodInfo, cands: Victims) -> Victims:
        return over_deserved(ssn.queues, job, cands)

    def enqueueable(job: JobInfo) -> int:
        """As Volcano's JobEnqueueableFn: an Open queue, and what it holds
        (placed and inqueue) with the job's minResources within its
        capability. Not within its deserved share: that counts only the jobs
        whose pods exist, so a PodGroup seen before its pods was refused on
        an empty cluster; the overcommit plugin keeps the cluster's room."""
        q = ssn.queues.get(job.queue)
        if q is None or q.state != "Open":
            return REJECT
        future = dict(q.allocated)
        add(future, q.inqueue)
        add(future, job.min_resources)
        if q.capability is not None and not le(future, q.capability, q.capability):
            job.enqueue_refusal = QUEUE_QUOTA
            return REJECT
        return PERMIT

    def enqueued(job: JobInfo) -> None:
        q = ssn.queues.get(job.queue)
        if q is not None:
            add(q.inqueue, job.min_resources)

    if opt.enabled("enableOverused"):
        ext.overused(overused)
    if opt.enabled("enableAllocatable"):
        ext.allocatable(allocatable)
    if opt.enabled("enableReclaimable"):
        ext.reclaimable(reclaim)
    if opt.enabled("enableJobEnqueued"):
        ext.job_enqueueable(enqueueable)
        ext.job_enqueued(enqueued)


def _preemptor(ext: Extensions, q: QueueInfo, job: JobInfo) -> bool:
    """The job outranks a job placed in its own queue and preempt runs: its
    room may come from its queue's own pods rather than from idle resources."""
    return "preempt" in ext.session.actions and q.lowest is not None and job.priority > q.lowest


def overcommit(ext: Extensions, opt: PluginOption) -> None:
    ssn = ext.session
    factor = float(opt.arguments.get("overcommit-factor", 1.2))
    used: Res = {}
    for q in ssn.queues.values():
        add(used, q.allocated)
        add(used, q.inqueue)

    def enqueueable(job: JobInfo) -> int:
        future = dict(used)
        add(future, job.min_resources)
        room = {d: int(ssn.total.get(d, 0) * factor) for d in DIMS}
        q = ssn.queues.get(job.queue)
        if le(future, room) or (q is not None and _preemptor(ext, q, job)):
            return PERMIT
        job.enqueue_refusal = "resource in cluster is overused"
        return REJECT

    def enqueued(job: JobInfo) -> None:
        add(used, job.min_resources)  # later jobs of this session see it

    if opt.enabled("enableJobEnqueued"):
        ext.job_enqueueable(enqueueable)
        ext.job_enqueued(enqueued)


def sla(ext: Extensions, opt: PluginOption) -> None:
    """Volcano's sla: a job may wait for room at most its `sla-waiting-time`
    (the PodGroup's annotation, else the plugin's argument): jobs go by the
    end of their waiting time (those with none last), and a job past it is
    enqueued whatever the other plugins say."""
    default = parse_duration(opt.arguments.get(SLA_WAITING_TIME))
    now = ext.session.now()

    def limit(job: JobInfo) -> float | None:
        return job.waiting_time if job.waiting_time is not None else default

    def deadline(job: JobInfo) -> float:
        w = limit(job)
        return job.created + w if w is not None else float("inf")

    def enqueueable(job: JobInfo) -> int:
        w = limit(job)
        return PERMIT if w is not None and now - job.created >= w else ABSTAIN

    if opt.enabled("enableJobOrder"):
        ext.job_order(deadline)
    if opt.enabled("enableJobEnqueued"):
        ext.job_enqueueable(enqueueable)


# ---- the Framework's: filters and scores --------------------------------------------


def predicates(node: NodeAdder, opt: PluginOption) -> None:
    for name in FILTERS:
        node.filter(name)


# Volcano's nodeorder arguments: the weight of each score, by the plugin giving it.
NODEORDER_WEIGHTS = {
    "leastrequested.weight": names.NODE_RESOURCES_FIT,
    "balancedresource.weight": names.BALANCED_ALLOCATION,
    "nodeaffinity.weight": names.NODE_AFFINITY,
    "podaffinity.weight": names.INTER_POD_AFFINITY,
    "tainttoleration.weight": names.TAINT_TOLERATION,
    "imagelocality.weight": names.IMAGE_LOCALITY,
    "podtopologyspread.weight": names.POD_TOPOLOGY_SPREAD,
}
MOST_REQUESTED = "mostrequested.weight"


def nodeorder(node: NodeAdder, opt: PluginOption) -> None:
    """The scores, weighted by Volcano's nodeorder arguments (defaults: least
    requested 1, balanced 1, node affinity 2, pod affinity 2, taint
    toleration 3, image locality 1, topology spread 2, most requested 0).
    `mostrequested.weight` scores NodeResourcesFit by MostAllocated where
    `leastrequested.weight` is 0 (one NodeResourcesFit scores one way)."""
    weights = {n: DEFAULT_WEIGHTS.get(n, 1) for n in (*node.scoring_filters(), *SCORES)}
    for arg, name in NODEORDER_WEIGHTS.items():
        if name in weights and arg in opt.arguments:
            weights[name] = int(opt.arguments[arg])
    most = int(opt.arguments.get(MOST_REQUESTED, 0) or 0)
    for name, weight in weights.items():
        if name == names.NODE_RESOURCES_FIT and most and not weight:
            node.score(name, most, {"scoringStrategy": {"type": "MostAllocated"}})
        else:
            node.score(name, weight)


def binpack(node: NodeAdder, opt: PluginOption) -> None:
    weight = int(opt.arguments.get("binpack.weight", 1))
    node.plugin(binpack_score.new(dict(opt.arguments)), weight)
