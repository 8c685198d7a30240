"""The scheduler's cache: the node table plus the state of each pod in it.

The arrays and per-node facts are `NodeTable`'s (nodetable.py). The cache
adds what the scheduler knows about pods: an *assumed* pod is one the
scheduler has placed but whose bind is not confirmed yet; it is counted on
its node at once, so the next pod is scheduled against it. `finish_binding`
starts its expiry clock, `add_pod` of the bound pod confirms it, and
`forget_pod` undoes it when the bind fails. Nominated pods (preemptors
waiting for their victims to go) are held here too.

All methods take the cache lock. The cache never talks to the API server.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from controlplane.scheduler.nodetable import (
    CPU_COL,
    EPH_COL,
    FIXED_RESOURCES,
    MEM_COL,
    PODS_COL,
    IntArray,
    NodeInfo,
    NodeTable,
)
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import Clock, RealClock

__all__ = [
    "CPU_COL", "EPH_COL", "FIXED_RESOURCES", "MEM_COL", "PODS_COL", "Cache", "NodeInfo", "finished",
]  # fmt: skip
Obj = dict[str, Any]
TERMINAL_PHASES = ("Succeeded", "Failed")


def finished(pod: Obj) -> bool:
    """Whether the pod ran to its end (Succeeded or Failed): it holds no room on
    its node, and the cache does not count it (kube-scheduler's informer drops
    terminal pods)."""
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


@dataclass
class _Assumed:
    info: PodInfo
    node: str
    binding_finished: bool = False
    deadline: float | None = None


class Cache(NodeTable):
    """Nodes, pods and assumed pods; see the module docstring."""

    def __init__(
        self, clock: Clock | None = None, assumed_ttl: float = 900.0, capacity: int = 64
    ) -> None:
        super().__init__(capacity)
        self.clock = clock or RealClock()
        self.assumed_ttl = assumed_ttl
        self.assumed: dict[str, _Assumed] = {}
        self._expiry: deque[tuple[float, str]] = deque()  # TTL is constant: deadlines only grow
        self.nominated: dict[str, tuple[PodInfo, str]] = {}  # pod key -> (pod, node)

    def _drop_on_node_removal(self, key: str) -> bool:
        # An assumed pod's bind will fail; forgetting it lets the pod be requeued.
        return self.assumed.pop(key, None) is not None

    def add_pod(self, p: PodInfo) -> None:
        """A pod bound to p.node_name (from the informer); confirms an assumption.
        A finished pod is removed instead."""
        with self.lock:
            if finished(p.pod):
                self.remove_pod(p.key)
                return
            self.nominated.pop(p.key, None)
            old_assumed = self.assumed.pop(p.key, None)
            current = self.pod_nodes.get(p.key)
            if current is not None:
                self._remove_from(p.key, current)
            elif old_assumed is not None:
                self._remove_from(p.key, old_assumed.node)
            info = self.nodes.get(p.node_name)
            if info is None:
                self.orphans.setdefault(p.node_name, {})[p.key] = p
                self.pod_nodes[p.key] = p.node_name
            else:
                self._place(p, info)
            self.generation += 1

    def update_pod(self, p: PodInfo) -> None:
        self.add_pod(p)

    def confirm_pod(self, p: PodInfo) -> None:
        """The bound pod an assumption was made for, counted the same way (the
        caller checked): the assumption ends without un-counting and re-counting
        it. Anything else goes through `add_pod`."""
        with self.lock:
            a = self.assumed.get(p.key)
            info = self.nodes.get(p.node_name)
            if (
                a is None
                or a.node != p.node_name
                or info is None
                or p.key not in info.pods
                or finished(p.pod)
            ):
                self.add_pod(p)
                return
            del self.assumed[p.key]
            self.nominated.pop(p.key, None)
            info.pods[p.key] = p
            info.generation += 1
            self.generation += 1

    def refresh_pod(self, key: str, pod: Obj) -> bool:
        """Swap in a newer object of a bound pod whose counted facts did not
        change (a status write); False when the pod is not placed on a known
        node here or has finished (the caller then updates it the long way)."""
        with self.lock:
            node = self.pod_nodes.get(key)
            info = self.nodes.get(node) if node is not None else None
            p = info.pods.get(key) if info is not None else None
            if info is None or p is None or key in self.assumed or finished(pod):
                return False
            if (pod.get("spec") or {}).get("nodeName") != info.name:
                return False
            info.pods[key] = p.with_changes(pod=pod)
            return True

    def _remove_from(self, key: str, node: str) -> PodInfo | None:
        info = self.nodes.get(node)
        if info is not None and key in info.pods:
            p = info.pods[key]
            self._unplace(p, info)
            return p
        orphan = self.orphans.get(node, {}).pop(key, None)
        self.pod_nodes.pop(key, None)
        return orphan

    def remove_pod(self, key: str) -> PodInfo | None:
        with self.lock:
            self.assumed.pop(key, None)
            self.nominated.pop(key, None)
            node = self.pod_nodes.get(key)
            if node is None:
                return None
            self.generation += 1
            return self._remove_from(key, node)

    def assume_pod(self, p: PodInfo, node: str) -> None:
        with self.lock:
            info = self.nodes[node]
            self.nominated.pop(p.key, None)
            self._place(p, info)
            self.assumed[p.key] = _Assumed(p, node)
            self.generation += 1

    def is_assumed(self, key: str) -> bool:
        return key in self.assumed

    def assumed_info(self, key: str) -> PodInfo | None:
        a = self.assumed.get(key)
        return a.info if a is not None else None

    def finish_binding(self, key: str) -> None:
        with self.lock:
            a = self.assumed.get(key)
            if a is not None:
                a.binding_finished = True
                a.deadline = self.clock.monotonic() + self.assumed_ttl
                self._expiry.append((a.deadline, key))

    def finish_binding_many(self, keys: Iterable[str]) -> None:
        """`finish_binding` of many pods under one acquisition of the lock."""
        with self.lock:
            for key in keys:
                self.finish_binding(key)

    def forget_pod(self, key: str) -> None:
        """Undo an assumption (bind failed or the pod was rejected at Permit)."""
        with self.lock:
            a = self.assumed.pop(key, None)
            if a is not None:
                self._remove_from(key, a.node)
                self.generation += 1

    def cleanup_expired(self) -> list[str]:
        """Forget assumed pods whose bind finished long ago but never showed up."""
        return [p.key for p in self.expire_assumed()]

    def expire_assumed(self) -> list[PodInfo]:
        """`cleanup_expired`, giving the pods forgotten (as they were assumed)."""
        now = self.clock.monotonic()
        expired: list[PodInfo] = []
        with self.lock:
            while self._expiry and self._expiry[0][0] <= now:
                deadline, key = self._expiry.popleft()
                a = self.assumed.get(key)
                if a is not None and a.deadline == deadline:
                    self.forget_pod(key)
                    expired.append(a.info)
            return expired

    # ---- nominated pods (preemptors waiting for their victims to go) ---------

    def add_nominated(self, p: PodInfo, node: str) -> None:
        with self.lock:
            self.nominated[p.key] = (p, node)

    def remove_nominated(self, key: str) -> None:
        with self.lock:
            self.nominated.pop(key, None)

    def nominated_requests(self, p: PodInfo) -> IntArray | None:
        """Per slot, requests of other nominated pods of at least `p`'s priority."""
        if not self.nominated:
            return None
        for q, _ in self.nominated.values():
            for rname in q.requests:
                self.res_col(rname)
        extra = np.zeros((self.n, self.alloc.shape[1]), np.int64)
        any_ = False
        for key, (q, node) in self.nominated.items():
            info = self.nodes.get(node)
            if key == p.key or q.priority < p.priority or info is None or key in info.pods:
                continue
            any_ = True
            for rname, v in q.requests.items():
                extra[info.slot, self.res_col(rname)] += v
            extra[info.slot, PODS_COL] += 1
        return extra if any_ else None

    def pods_on(self, node: str) -> Iterable[PodInfo]:
        info = self.nodes.get(node)
        return list(info.pods.values()) if info else []

    def node_of(self, key: str) -> str | None:
        return self.pod_nodes.get(key)
