"""NodeName: a pod that names its node (spec.nodeName) fits only that node."""

from __future__ import annotations

from collections.abc import Sequence

from controlplane.scheduler import names
from controlplane.scheduler.cache import Cache
from controlplane.scheduler.framework import FilterResult, Slots
from controlplane.scheduler.handle import NodeHandle
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import (
    NODE_ADD,
    ClusterEvent,
    Code,
    CycleState,
    Status,
    relevant,
)

NAME = names.NODE_NAME
REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = NAME

    def pre_filter(self, state: CycleState, pod: PodInfo, cache: Cache) -> Status:
        return relevant(pod.node_name)

    def filter(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> FilterResult:
        info = cache.nodes.get(pod.node_name)
        bad = slots != (info.slot if info is not None else -1)
        return FilterResult.reject(bad, REASON, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return [NODE_ADD]


def new(args: dict[str, object], handle: NodeHandle) -> NodeName:
    return NodeName()
