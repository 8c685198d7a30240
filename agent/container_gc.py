"""Container garbage collection, as the kubelet's container GC does it.

Dead (exited or never started) containers older than
`--minimum-container-ttl-duration` (0: any age) are removed, grouped by pod
and container name, keeping the newest `--maximum-dead-containers-per-container`
(1) of each: a crash-looping container keeps the one its restart count and
`kubectl logs --previous` read. `--maximum-dead-containers` (-1: no limit)
then caps the node's total, oldest first. A container's log goes with it.
Pods that are gone lose all their containers through their cleanup, not here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ContainerGCPolicy:
    max_per_container: int = 1
    min_age: float = 0.0
    max_containers: int = -1


@dataclass(frozen=True)
class DeadContainer:
    id: str
    pod_uid: str
    name: str
    created_at: float  # seconds since the epoch
    log_path: str = ""


def containers_to_remove(
    dead: Sequence[DeadContainer], now: float, policy: ContainerGCPolicy
) -> list[DeadContainer]:
    """The dead containers to remove, oldest first."""
    old_enough = [c for c in dead if now - c.created_at >= policy.min_age]
    groups: dict[tuple[str, str], list[DeadContainer]] = {}
    for c in old_enough:
        groups.setdefault((c.pod_uid, c.name), []).append(c)
    remove: list[DeadContainer] = []
    kept: list[DeadContainer] = []
    keep_n = max(0, policy.max_per_container)
    for group in groups.values():
        group.sort(key=lambda c: (c.created_at, c.id), reverse=True)  # newest first
        if policy.max_per_container < 0:
            kept.extend(group)
            continue
        kept.extend(group[:keep_n])
        remove.extend(group[keep_n:])
    if policy.max_containers >= 0 and len(kept) > policy.max_containers:
        kept.sort(key=lambda c: (c.created_at, c.id))
        remove.extend(kept[: len(kept) - policy.max_containers])
    return sorted(remove, key=lambda c: (c.created_at, c.id))
