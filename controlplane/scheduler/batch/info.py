"""What a session knows of jobs and queues: `JobInfo`, `QueueInfo` and their resources.

A *job* is a PodGroup with its pods: the pods placed (bound or assumed in the
cache) and those pending. A *queue* adds up its jobs. Resources are cpu
(millicores) and memory (bytes), as `Res` dicts; `add`, `le` and `req` are
the arithmetic every part of the batch scheduler shares (Volcano's
`api.Resource`, `JobInfo` and `QueueInfo`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from controlplane.api import volcano
from controlplane.scheduler.podinfo import PodInfo

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
