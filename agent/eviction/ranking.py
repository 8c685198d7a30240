"""The order in which the kubelet evicts pods under node pressure.

Memory (rankMemoryPressure): pods whose memory usage exceeds their request
first, then lower priority first, then the larger usage above the request
first. Disk (rankDiskPressureFunc): the same with ephemeral storage. PIDs
(rankPIDPressure): lower priority first, then more processes first.
BestEffort pods request nothing, so any use exceeds it: they go first,
Guaranteed pods within their requests last. Critical pods (priority at or
above system-cluster-critical, and static pods) are never evicted, as the
kubelet's eviction manager skips them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.eviction import thresholds as t

CRITICAL_PRIORITY = 2_000_000_000  # system-cluster-critical


@dataclass(frozen=True)
class PodUsage:
    uid: str
    pod: Mapping[str, Any] = field(compare=False, repr=False, default_factory=dict)
    priority: int = 0
    memory: int = 0  # working set, bytes
    memory_request: int = 0
    disk: int = 0  # ephemeral storage (logs, writable layer, emptyDir), bytes
    disk_request: int = 0
    processes: int = 0
    critical: bool = False


def _by_resource(use: int, request: int, priority: int) -> tuple[int, int, int]:
    exceeds = use > request
    return (0 if exceeds else 1, priority, -(use - request))


def rank(signal: str, pods: Sequence[PodUsage]) -> list[PodUsage]:
    """Evictable pods, first to evict first."""
    candidates = [p for p in pods if not p.critical and p.priority < CRITICAL_PRIORITY]
    if signal in (t.MEMORY_AVAILABLE, t.ALLOCATABLE_MEMORY_AVAILABLE):
        return sorted(
            candidates, key=lambda p: _by_resource(p.memory, p.memory_request, p.priority)
        )
    if signal == t.PID_AVAILABLE:
        return sorted(candidates, key=lambda p: (p.priority, -p.processes))
    return sorted(candidates, key=lambda p: _by_resource(p.disk, p.disk_request, p.priority))


RESOURCE_OF = {
    t.MEMORY_AVAILABLE: "memory",
    t.ALLOCATABLE_MEMORY_AVAILABLE: "memory",
    t.NODEFS_AVAILABLE: "ephemeral-storage",
    t.NODEFS_INODES_FREE: "inodes",
    t.IMAGEFS_AVAILABLE: "ephemeral-storage",
    t.IMAGEFS_INODES_FREE: "inodes",
    t.PID_AVAILABLE: "pids",
}


def eviction_message(signal: str, threshold: str, available: int, victim: PodUsage) -> str:
    """The kubelet's wording: the resource, the threshold, what was left and
    what the pod used against its request."""
    resource = RESOURCE_OF.get(signal, signal)
    msg = (
        f"The node was low on resource: {resource}. Threshold quantity: {threshold}, "
        f"available: {_human(available, resource)}. "
    )
    if resource == "memory":
        msg += f"Pod was using {_human(victim.memory, resource)}, request is {_human(victim.memory_request, resource)}. "
    elif resource == "pids":
        msg += f"Pod was running {victim.processes} processes. "
    else:
        msg += f"Pod was using {_human(victim.disk, resource)}, request is {_human(victim.disk_request, resource)}. "
    return msg + f"Signal {signal}."


def _human(n: int, resource: str) -> str:
    if resource not in ("memory", "ephemeral-storage"):
        return str(n)
    return f"{n >> 10}Ki"
