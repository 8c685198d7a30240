"""NodeUnschedulable: reject nodes marked spec.unschedulable (cordoned).

A pod that tolerates the `node.kubernetes.io/unschedulable:NoSchedule` taint
may still go there. Preemption cannot help, so the rejection is unresolvable.
"""

from __future__ import annotations

from collections.abc import Sequence

from controlplane.scheduler import names
from controlplane.scheduler.cache import Cache
from controlplane.scheduler.framework import FilterResult, Slots
from controlplane.scheduler.handle import NodeHandle
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import NODE_ADD, NODE_UPDATE, ClusterEvent, Code, CycleState

NAME = names.NODE_UNSCHEDULABLE
REASON = "node(s) were unschedulable"
TAINT = "node.kubernetes.io/unschedulable"


class NodeUnschedulable:
    name = NAME

    def filter(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> FilterResult:
        if any(t.tolerates(TAINT, "", "NoSchedule") for t in pod.tolerations):
            return FilterResult.all_pass(len(slots))
        return FilterResult.reject(
            cache.rows(cache.unschedulable, slots), REASON, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        )

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return [NODE_ADD, NODE_UPDATE]


def new(args: dict[str, object], handle: NodeHandle) -> NodeUnschedulable:
    return NodeUnschedulable()
