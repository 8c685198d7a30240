"""NodeConditions: reject nodes that are not Ready or report pressure.

Not Ready, DiskPressure and PIDPressure reject every pod; MemoryPressure
rejects only BestEffort pods (as the old CheckNodeMemoryPressure predicate).
A pod tolerating the matching `node.kubernetes.io/*` taint passes anyway.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from controlplane.scheduler import names
from controlplane.scheduler.cache import Cache
from controlplane.scheduler.framework import FilterResult, Slots
from controlplane.scheduler.handle import NodeHandle
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import NODE_ADD, NODE_UPDATE, ClusterEvent, Code, CycleState

NAME = names.NODE_CONDITIONS
CHECKS = (
    ("not_ready", "node.kubernetes.io/not-ready", "node(s) were not ready"),
    ("memory_pressure", "node.kubernetes.io/memory-pressure", "node(s) had memory pressure"),
    ("disk_pressure", "node.kubernetes.io/disk-pressure", "node(s) had disk pressure"),
    ("pid_pressure", "node.kubernetes.io/pid-pressure", "node(s) had pid pressure"),
)


class NodeConditions:
    name = NAME

    def filter(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> FilterResult:
        ok = np.ones(len(slots), bool)
        reasons: list[tuple[str, npt.NDArray[np.bool_], Code]] = []
        for attr, taint, reason in CHECKS:
            if attr == "memory_pressure" and not pod.best_effort:
                continue
            if any(t.tolerates(taint, "", "NoSchedule") for t in pod.tolerations):
                continue
            flags = getattr(cache, attr)
            if not flags[: cache.n].any():
                continue
            bad = cache.rows(flags, slots) & ok
            if bad.any():
                reasons.append((reason, bad, Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
                ok &= ~bad
        return FilterResult(ok, reasons)

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return [NODE_ADD, NODE_UPDATE]


def new(args: dict[str, object], handle: NodeHandle) -> NodeConditions:
    return NodeConditions()
