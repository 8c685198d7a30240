"""NodePorts: reject nodes where a requested hostPort is already taken.

Two host ports conflict when protocol and port match and either host IP is
0.0.0.0 or they are equal. Removing pods frees ports, so preemption can help.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from controlplane.scheduler import names
from controlplane.scheduler.cache import Cache
from controlplane.scheduler.framework import FilterResult, Slots
from controlplane.scheduler.handle import NodeHandle
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import (
    NODE_ADD,
    POD_DELETE,
    ClusterEvent,
    CycleState,
    Status,
    relevant,
)

NAME = names.NODE_PORTS
REASON = "node(s) didn't have free ports for the requested pod ports"


def conflicts(a: tuple[str, str, int], b: tuple[str, str, int]) -> bool:
    return a[1] == b[1] and a[2] == b[2] and (a[0] == b[0] or "0.0.0.0" in (a[0], b[0]))


class NodePorts:
    name = NAME

    def pre_filter(self, state: CycleState, pod: PodInfo, cache: Cache) -> Status:
        return relevant(pod.host_ports)

    def filter(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> FilterResult:
        bad = np.zeros(len(slots), bool)
        for want in pod.host_ports:
            for used, counts in cache.ports.items():
                if conflicts(want, used):
                    bad |= counts[slots] > 0
        return FilterResult.reject(bad, REASON)

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return [NODE_ADD, POD_DELETE]


def new(args: dict[str, object], handle: NodeHandle) -> NodePorts:
    return NodePorts()
