"""Pods waiting at Permit: each holds its assumed place until allowed, rejected or timed out.

`WaitingPods` keeps them by pod key with their deadlines. Allowing one hands
it to the binding cycle (`start_binding`); rejecting one runs its profile's
Unreserve, forgets the assumption in the cache and, unless the pod is gone,
sends it back to the queue as unschedulable (its place is free for others).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from controlplane.scheduler import names
from controlplane.scheduler.cache import Cache
from controlplane.scheduler.framework import Framework
from controlplane.scheduler.queue import QueuedPodInfo, SchedulingQueue
from controlplane.scheduler.types import POD_DELETE, CycleState


@dataclass
class WaitingPod:
    qp: QueuedPodInfo
    framework: Framework
    state: CycleState
    node: str
    deadline: float


class WaitingPods:
    def __init__(
        self,
        cache: Cache,
        queue: SchedulingQueue,
        start_binding: Callable[[WaitingPod], None],
        rejected: Callable[[str, str], None],
    ) -> None:
        self.cache = cache
        self.queue = queue
        self._start_binding = start_binding
        self._rejected = rejected  # (pod key, message): record the decision
        self.lock = threading.RLock()
        self.pods: dict[str, WaitingPod] = {}

    def add(self, w: WaitingPod) -> None:
        with self.lock:
            self.pods[w.qp.key] = w

    def get(self, key: str) -> WaitingPod | None:
        with self.lock:
            return self.pods.get(key)

    def allow(self, key: str) -> None:
        """A Permit plugin lets a waiting pod go on to bind."""
        with self.lock:
            w = self.pods.pop(key, None)
        if w is not None:
            self._start_binding(w)

    def reject(self, key: str, message: str, requeue: bool = True) -> None:
        with self.lock:
            w = self.pods.pop(key, None)
        if w is None:
            return
        w.framework.run_unreserve(w.state, w.qp.info, w.node)
        self.cache.forget_pod(key)
        self._rejected(key, message)
        if requeue:
            self.queue.add_unschedulable(w.qp, {names.COSCHEDULING}, message)
            self.queue.move_on_event(POD_DELETE)

    def expire(self, now: float) -> float | None:
        """Reject the pods whose Permit wait timed out; the next deadline, if any."""
        with self.lock:
            expired = [k for k, w in self.pods.items() if w.deadline <= now]
        for key in expired:
            self.reject(key, "rejected at Permit: timed out waiting for the pod group")
        with self.lock:
            return min((w.deadline for w in self.pods.values()), default=None)
