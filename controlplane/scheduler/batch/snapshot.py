"""The session's jobs and queues, rebuilt per PodGroup only where something changed.

A session starts from a snapshot: every PodGroup as a `JobInfo` (its spec's
facts, its placed and pending pods, what they request) and every Queue as
a `QueueInfo` adding them up. Building each job from its pods every session
made the session cost grow with every pod in the cluster, running or not;
so `Snapshots` keeps, per group,

- the facts parsed from the PodGroup object (queue, minMember, minResources,
  creation time), parsed again only when the object is replaced;
- its members as last seen (placed pods, pending pods, allocated and
  requested resources), rebuilt only after `invalidate(key)`: the scheduler
  calls it when a member pod changes, a bind fails, or a session placed or
  evicted one of its pods; `invalidate_all()` when nodes come or go or
  priority classes change.

`take()` then copies what the session may change (each job's dicts and
lists) and adds the queues up: a cost per job, not per pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controlplane.api import volcano
from controlplane.scheduler import resources
from controlplane.scheduler.batch.session import DIMS, JobInfo, QueueInfo, Res, add, req
from controlplane.scheduler.cache import CPU_COL, MEM_COL, Cache
from controlplane.scheduler.podinfo import PodInfo, parse_time

Obj = dict[str, Any]
DONE = ("Succeeded", "Failed")


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


@dataclass(frozen=True)
class _Members:
    placed: dict[str, PodInfo]
    pending: list[PodInfo]
    allocated: Res
    request: Res
    best: int | None  # the highest priority of its pods


def _facts(group: Obj) -> _Facts:
    spec = group.get("spec") or {}
    return _Facts(
        queue=spec.get("queue") or volcano.DEFAULT_QUEUE,
        min_member=int(spec.get("minMember", 1)),
        min_task_member={str(k): int(v) for k, v in (spec.get("minTaskMember") or {}).items()},
        min_resources=res(spec.get("minResources")),
        priority_class=spec.get("priorityClassName") or "",
        created=parse_time((group.get("metadata") or {}).get("creationTimestamp")) or 0.0,
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
    )


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
    ) -> None:
        self.cache = cache
        self.groups = groups
        self.members = members
        self.queues = queues
        self.pending = pending
        self.priority_classes = priority_classes
        self._facts: dict[str, tuple[Obj, _Facts]] = {}
        self._members: dict[str, _Members] = {}

    def invalidate(self, key: str) -> None:
        self._members.pop(key, None)

    def invalidate_all(self) -> None:
        self._members.clear()

    def forget(self, key: str) -> None:
        self._members.pop(key, None)
        self._facts.pop(key, None)

    def _facts_of(self, key: str, group: Obj) -> _Facts:
        known = self._facts.get(key)
        if known is not None and known[0] is group:
            return known[1]
        facts = _facts(group)
        self._facts[key] = (group, facts)
        return facts

    def _members_of(self, key: str) -> _Members:
        known = self._members.get(key)
        if known is not None:
            return known
        cache = self.cache
        placed: dict[str, PodInfo] = {}
        pending: list[PodInfo] = []
        allocated: Res = {}
        best: int | None = None
        for pk in self.members.get(key, ()):
            node = cache.node_of(pk)
            p: PodInfo | None
            if node is not None:
                info = cache.nodes.get(node)
                p = info.pods.get(pk) if info is not None else None
                if p is None or (p.pod.get("status") or {}).get("phase") in DONE:
                    continue
                placed[pk] = p
                add(allocated, req(p))
            else:
                p = self.pending.get(pk)
                if p is None:
                    continue
                pending.append(p)
            best = p.priority if best is None else max(best, p.priority)
        request = dict(allocated)
        for p in pending:
            add(request, req(p))
        made = _Members(placed, pending, allocated, request, best)
        self._members[key] = made
        return made

    def take(self) -> tuple[dict[str, JobInfo], dict[str, QueueInfo], Res]:
        """Jobs, queues and the cluster's allocatable cpu and memory (call under the cache lock)."""
        cache = self.cache
        valid = cache.valid[: cache.n]
        alloc = cache.alloc[: cache.n][valid]
        total = {"cpu": int(alloc[:, CPU_COL].sum()), "memory": int(alloc[:, MEM_COL].sum())}
        queues = {name: queue_info(name, q) for name, q in self.queues.items()}
        jobs: dict[str, JobInfo] = {}
        for key, g in self.groups.items():
            f = self._facts_of(key, g)
            qi = queues.get(f.queue)
            if qi is None:
                continue
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
                pending=list(m.pending),
                placed=dict(m.placed),
                allocated=dict(m.allocated),
                request=dict(m.request),
            )  # fmt: skip
            add(qi.allocated, m.allocated)
            add(qi.request, m.request)
            if job.phase == "Inqueue" and len(m.placed) < job.min_member:
                add(qi.inqueue, job.min_resources)
            jobs[key] = job
        return jobs, queues, total
