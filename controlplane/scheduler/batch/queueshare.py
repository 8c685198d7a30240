"""What proportion and capacity both judge by a queue's deserved share:
how far a queue is into its share, and which victims reclaim may take back
from queues above theirs (Volcano's two plugins share this logic too)."""

from __future__ import annotations

from controlplane.scheduler.batch.info import DIMS, JobInfo, QueueInfo, Res, add, le, req
from controlplane.scheduler.batch.session import Victims


def share(used: Res, total: Res) -> float:
    """The largest fraction of `total` that `used` takes in any dimension."""
    return max((used.get(d, 0) / total[d] for d in DIMS if total.get(d)), default=0.0)


def over_deserved(queues: dict[str, QueueInfo], job: JobInfo, cands: Victims) -> Victims:
    """The candidates that reclaim for `job` may evict: in another reclaimable
    queue that is over its deserved share in some dimension the victim holds
    (as Volcano: not allocated <= deserved in those, so a queue over its cpu
    share but under its memory share still gives back), and that stays at or
    above its guarantee once the victims before it are gone."""
    left: dict[str, Res] = {}
    out = []
    for vj, v in cands:
        q = queues[vj.queue]
        if not q.reclaimable or vj.queue == job.queue:
            continue
        alloc = left.setdefault(q.name, dict(q.allocated))
        after = dict(alloc)
        add(after, req(v), -1)
        dims = [d for d in DIMS if req(v).get(d)]
        if not le(alloc, q.deserved, dims) and le(q.guarantee, after, q.guarantee):
            left[q.name] = after
            out.append((vj, v))
    return out
