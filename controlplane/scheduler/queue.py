"""The scheduling queue: active heap, backoff heap, unschedulable pool.

As kube-scheduler's PriorityQueue:
- activeQ: pods ready to be tried, ordered by the profile's QueueSort key
  (priority, then creation time). With `drf_share`, pods are instead taken
  from the namespace with the smallest dominant resource share first
  (Dominant Resource Fairness across namespaces), priority order within it.
- backoffQ: pods that failed recently, each waiting 1s*2^(attempts-1) (capped)
  before going back to activeQ.
- unschedulablePods: pods that fit nowhere; a cluster event moves them back
  only if a plugin that rejected them registered interest in that event, and
  every pod is retried at least every `max_unschedulable_seconds`.

The clock is injected; `pop(timeout)` blocks on a condition until a pod is
ready or the next backoff expires — never a busy loop. Tests use
`pop(block=False)` with a fake clock.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import Clock, ClusterEvent, RealClock

SortKey = Callable[[PodInfo, float], tuple[Any, ...]]


@dataclass
class QueuedPodInfo:
    info: PodInfo
    added: float  # when first queued
    attempts: int = 0
    backoff_until: float = 0.0
    unschedulable_plugins: set[str] = field(default_factory=set)
    cycle: int = 0  # scheduling cycle of the last pop
    parked_at: float = 0.0  # when it entered the unschedulable pool
    message: str = ""

    @property
    def key(self) -> str:
        return self.info.key


class _Heap:
    """A keyed heap with lazy deletion."""

    def __init__(self) -> None:
        self.heap: list[tuple[Any, int, str]] = []
        self.items: dict[str, tuple[int, QueuedPodInfo]] = {}
        self.seq = itertools.count()

    def push(self, order: Any, qp: QueuedPodInfo) -> None:
        n = next(self.seq)
        self.items[qp.key] = (n, qp)
        heapq.heappush(self.heap, (order, n, qp.key))

    def _clean(self) -> None:
        while self.heap:
            _, n, key = self.heap[0]
            item = self.items.get(key)
            if item is not None and item[0] == n:
                return
            heapq.heappop(self.heap)

    def peek(self) -> tuple[Any, QueuedPodInfo] | None:
        self._clean()
        if not self.heap:
            return None
        order, _, key = self.heap[0]
        return order, self.items[key][1]

    def pop(self) -> QueuedPodInfo | None:
        self._clean()
        if not self.heap:
            return None
        _, _, key = heapq.heappop(self.heap)
        return self.items.pop(key)[1]

    def remove(self, key: str) -> QueuedPodInfo | None:
        item = self.items.pop(key, None)
        return item[1] if item else None

    def get(self, key: str) -> QueuedPodInfo | None:
        item = self.items.get(key)
        return item[1] if item else None

    def __len__(self) -> int:
        return len(self.items)


class SchedulingQueue:
    def __init__(
        self,
        sort_key: SortKey,
        clock: Clock | None = None,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_unschedulable_seconds: float = 300.0,
        plugin_events: dict[str, list[ClusterEvent]] | None = None,
        drf_share: Callable[[str], float] | None = None,
    ) -> None:
        self.sort_key = sort_key
        self.clock = clock or RealClock()
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_unschedulable_seconds = max_unschedulable_seconds
        self.plugin_events = plugin_events or {}
        self.drf_share = drf_share
        self.active = _Heap()
        self.by_namespace: dict[str, _Heap] = {}  # DRF mode
        self.backoff = _Heap()
        self.unschedulable: dict[str, QueuedPodInfo] = {}
        # The same pods grouped by the plugins that rejected them (a cluster
        # event is judged once per group, not once per pod), and in the order
        # they were parked (the periodic retry looks at the oldest only):
        # neither costs O(unschedulable pods) per event or per pop.
        self._groups: dict[frozenset[str], dict[str, QueuedPodInfo]] = {}
        self._parked: deque[tuple[float, str]] = deque()
        self.cond = threading.Condition()
        self.cycle = 0
        self.move_request_cycle = -1
        self.closed = False

    # ---- active queue (plain or DRF) -------------------------------------

    def _push_active(self, qp: QueuedPodInfo) -> None:
        order = self.sort_key(qp.info, qp.added)
        if self.drf_share is None:
            self.active.push(order, qp)
        else:
            self.by_namespace.setdefault(qp.info.namespace, _Heap()).push(order, qp)
        self.cond.notify()

    def _pop_active(self) -> QueuedPodInfo | None:
        if self.drf_share is None:
            return self.active.pop()
        best: tuple[Any, ...] | None = None
        best_ns = ""
        for ns, heap in self.by_namespace.items():
            head = heap.peek()
            if head is None:
                continue
            rank = (self.drf_share(ns), head[0])
            if best is None or rank < best:
                best, best_ns = rank, ns
        return self.by_namespace[best_ns].pop() if best is not None else None

    def _remove_active(self, key: str) -> QueuedPodInfo | None:
        if self.drf_share is None:
            return self.active.remove(key)
        for heap in self.by_namespace.values():
            qp = heap.remove(key)
            if qp is not None:
                return qp
        return None

    def _get_active(self, key: str) -> QueuedPodInfo | None:
        if self.drf_share is None:
            return self.active.get(key)
        for heap in self.by_namespace.values():
            qp = heap.get(key)
            if qp is not None:
                return qp
        return None

    def active_len(self) -> int:
        if self.drf_share is None:
            return len(self.active)
        return sum(len(h) for h in self.by_namespace.values())

    # ---- public API ----------------------------------------------------------

    def add(self, info: PodInfo) -> None:
        """A new pending pod (or a newer version of one already queued)."""
        with self.cond:
            old = self._find(info.key)
            if old is not None:
                self._update(old, info)
                return
            self._push_active(QueuedPodInfo(info, self.clock.monotonic()))

    def _park(self, qp: QueuedPodInfo) -> None:
        self._unpark(qp.key)
        self.unschedulable[qp.key] = qp
        self._groups.setdefault(frozenset(qp.unschedulable_plugins), {})[qp.key] = qp
        self._parked.append((qp.parked_at, qp.key))

    def _unpark(self, key: str) -> QueuedPodInfo | None:
        qp = self.unschedulable.pop(key, None)
        if qp is not None:
            group = frozenset(qp.unschedulable_plugins)
            members = self._groups.get(group)
            if members is not None:
                members.pop(key, None)
                if not members:
                    del self._groups[group]
        return qp

    def _oldest_parked(self) -> QueuedPodInfo | None:
        """The pod parked longest ago (entries of pods gone or re-parked are dropped)."""
        while self._parked:
            at, key = self._parked[0]
            qp = self.unschedulable.get(key)
            if qp is not None and qp.parked_at == at:
                return qp
            self._parked.popleft()
        return None

    def _find(self, key: str) -> QueuedPodInfo | None:
        return self._get_active(key) or self.backoff.get(key) or self.unschedulable.get(key)

    def _update(self, qp: QueuedPodInfo, info: PodInfo) -> None:
        qp.info = info
        if self._get_active(qp.key) is not None:
            self._remove_active(qp.key)
            self._push_active(qp)
        elif self._unpark(qp.key) is not None:
            # The pod changed: it may fit now.
            self._requeue(qp)

    def update(self, info: PodInfo) -> None:
        self.add(info)

    def delete(self, key: str) -> None:
        with self.cond:
            self._remove_active(key)
            self.backoff.remove(key)
            self._unpark(key)

    def __contains__(self, key: str) -> bool:
        with self.cond:
            return self._find(key) is not None

    def lengths(self) -> dict[str, int]:
        """Pods per queue (scheduler_pending_pods)."""
        with self.cond:
            return {"active": self.active_len(), "backoff": len(self.backoff),
                    "unschedulable": len(self.unschedulable)}  # fmt: skip

    def __len__(self) -> int:
        with self.cond:
            return self.active_len() + len(self.backoff) + len(self.unschedulable)

    def backoff_duration(self, attempts: int) -> float:
        d = self.initial_backoff
        for _ in range(max(attempts - 1, 0)):
            d *= 2
            if d >= self.max_backoff:
                return self.max_backoff
        return d

    def _requeue(self, qp: QueuedPodInfo) -> None:
        if qp.backoff_until > self.clock.monotonic():
            self.backoff.push(qp.backoff_until, qp)
        else:
            self._push_active(qp)

    def _flush_backoff(self) -> None:
        now = self.clock.monotonic()
        while True:
            head = self.backoff.peek()
            if head is None or head[0] > now:
                return
            qp = self.backoff.pop()
            assert qp is not None
            self._push_active(qp)

    def _flush_unschedulable(self) -> None:
        now = self.clock.monotonic()
        while True:
            qp = self._oldest_parked()
            if qp is None or now - qp.parked_at < self.max_unschedulable_seconds:
                return
            self._unpark(qp.key)
            self._requeue(qp)

    def next_deadline(self) -> float | None:
        """When the next backed-off pod becomes ready (clock time), if any."""
        with self.cond:
            head = self.backoff.peek()
            times = [head[0]] if head else []
            oldest = self._oldest_parked()
            if oldest is not None:
                times.append(oldest.parked_at + self.max_unschedulable_seconds)
            return min(times) if times else None

    def pop(self, block: bool = True, timeout: float | None = None) -> QueuedPodInfo | None:
        """The next pod to schedule; blocks (up to `timeout`) until one is ready."""
        with self.cond:
            waited = False
            while True:
                self._flush_backoff()
                self._flush_unschedulable()
                qp = self._pop_active()
                if qp is not None:
                    self.cycle += 1
                    qp.cycle = self.cycle
                    qp.attempts += 1
                    return qp
                if not block or self.closed or (waited and timeout is not None):
                    return None
                wait = timeout
                head = self.backoff.peek()
                if head is not None:
                    until = max(head[0] - self.clock.monotonic(), 0.001)
                    wait = until if wait is None else min(wait, until)
                self.cond.wait(wait)
                waited = timeout is not None

    def add_unschedulable(self, qp: QueuedPodInfo, plugins: set[str], message: str = "") -> None:
        """A pod that was tried and did not fit (or failed to bind)."""
        with self.cond:
            if self._find(qp.key) is not None:
                return  # a newer version was queued meanwhile
            now = self.clock.monotonic()
            qp.unschedulable_plugins = set(plugins)
            qp.message = message
            qp.backoff_until = now + self.backoff_duration(qp.attempts)
            if self.move_request_cycle >= qp.cycle:
                # Something changed while it was being scheduled: retry after backoff.
                self.backoff.push(qp.backoff_until, qp)
            else:
                qp.parked_at = now
                self._park(qp)

    def add_backoff(self, qp: QueuedPodInfo) -> None:
        """A pod that hit an error (not a fit problem): retry after its backoff."""
        with self.cond:
            if self._find(qp.key) is not None:
                return
            qp.backoff_until = self.clock.monotonic() + self.backoff_duration(qp.attempts)
            self.backoff.push(qp.backoff_until, qp)

    def activate(self, key: str) -> None:
        """Move a parked pod straight to activeQ (e.g. gang siblings). A pod in
        backoff stays there: a gang released after a failed attempt must not
        come straight back (each member pulling the others forward again)."""
        with self.cond:
            qp = self._unpark(key)
            if qp is not None:
                self._push_active(qp)

    def move_on_event(self, event: ClusterEvent) -> int:
        """Move unschedulable pods that `event` may help back to active/backoff."""
        with self.cond:
            self.move_request_cycle = self.cycle
            moved = 0
            for plugins, members in list(self._groups.items()):
                if not self._interested(plugins, event):
                    continue
                for qp in list(members.values()):
                    self._unpark(qp.key)
                    self._requeue(qp)
                    moved += 1
            return moved

    def _interested(self, plugins: frozenset[str], event: ClusterEvent) -> bool:
        """Whether a pod rejected by `plugins` may fit after `event`."""
        if not plugins:
            return True
        for plugin in plugins:
            events = self.plugin_events.get(plugin)
            if events is None or any(e.matches(event) for e in events):
                return True
        return False

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def pending(self) -> dict[str, list[str]]:
        with self.cond:
            return {
                "active": [q.key for q in (self.active.items[k][1] for k in self.active.items)],
                "backoff": list(self.backoff.items),
                "unschedulable": list(self.unschedulable),
            }
