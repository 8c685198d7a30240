"""The eviction manager: the kubelet's synchronize loop.

Each round observes the signals, finds the thresholds met (a threshold
stays met until the signal recovers past it by its minimum reclaim), keeps
the node's pressure conditions (held for the pressure transition period
after the last time a threshold was met), and once a hard threshold is met,
or a soft one has been met for its grace period, acts on the most urgent
signal (memory first): for disk signals it first reclaims node-level
resources (image GC, dead containers) and looks again; if the threshold
is still met, it evicts one pod, the first by the kubelet's ranking, and
waits until its containers are gone. Before any of that, pods past a
local storage limit (an emptyDir's sizeLimit: local_storage.py) are evicted
at once, as the kubelet does. Pure policy around injected callables; the
agent runs it on a thread, woken early by the memory cgroup threshold
notification.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from agent.eviction import thresholds as t
from agent.eviction.ranking import PodUsage, eviction_message, rank
from agent.eviction.signals import Observation
from agent.eviction.thresholds import EvictionConfig, Threshold

log = logging.getLogger("skiff.agent.eviction")

MEMORY_PRESSURE = "MemoryPressure"
DISK_PRESSURE = "DiskPressure"
PID_PRESSURE = "PIDPressure"

CONDITION_OF = {
    t.MEMORY_AVAILABLE: MEMORY_PRESSURE,
    t.ALLOCATABLE_MEMORY_AVAILABLE: MEMORY_PRESSURE,
    t.NODEFS_AVAILABLE: DISK_PRESSURE,
    t.NODEFS_INODES_FREE: DISK_PRESSURE,
    t.IMAGEFS_AVAILABLE: DISK_PRESSURE,
    t.IMAGEFS_INODES_FREE: DISK_PRESSURE,
    t.PID_AVAILABLE: PID_PRESSURE,
}
TAINT_OF = {
    MEMORY_PRESSURE: "node.kubernetes.io/memory-pressure",
    DISK_PRESSURE: "node.kubernetes.io/disk-pressure",
    PID_PRESSURE: "node.kubernetes.io/pid-pressure",
}
_ORDER = {MEMORY_PRESSURE: 0, PID_PRESSURE: 1, DISK_PRESSURE: 2}

Observe = Callable[[], Mapping[str, Observation]]
Evict = Callable[[PodUsage, str, int], bool]  # victim, message, grace -> evicted


@dataclass(frozen=True)
class Pressure:
    condition: str
    message: str


class EvictionManager:
    def __init__(
        self,
        cfg: EvictionConfig,
        observe: Observe,
        pods: Callable[[], Sequence[PodUsage]],
        evict: Evict,
        reclaim: Callable[[str], None] = lambda signal: None,
        now: Callable[[], float] = time.monotonic,
        local_storage: Callable[[], Sequence[tuple[PodUsage, str]]] = lambda: (),
    ) -> None:
        self.cfg = cfg
        self.local_storage = local_storage
        self.observe = observe
        self.pods = pods
        self.evict = evict
        self.reclaim = reclaim
        self.now = now
        self._met: set[Threshold] = set()
        self._first_met: dict[Threshold, float] = {}
        self._last_pressure: dict[str, tuple[float, str]] = {}
        self.last_observed: Mapping[str, Observation] = {}

    def _thresholds_met(self, obs: Mapping[str, Observation]) -> list[Threshold]:
        met = []
        for th in self.cfg.thresholds:
            o = obs.get(th.signal)
            if o is None:
                continue
            limit = th.value.of(o.capacity)
            if th in self._met and th.min_reclaim is not None:
                limit += th.min_reclaim.of(o.capacity)
            if o.available < limit:
                met.append(th)
        return met

    def synchronize(self) -> list[str]:
        """One round; the UIDs of the pods evicted."""
        evicted = []
        for victim, message in self.local_storage():  # limits first, as the kubelet
            log.warning("eviction: pod %s: %s", victim.uid, message)
            if self.evict(victim, message, 0):
                evicted.append(victim.uid)
        if evicted:
            return evicted
        obs = self.observe()
        self.last_observed = obs
        now = self.now()
        met = self._thresholds_met(obs)
        self._met = set(met)
        for th in met:
            o = obs[th.signal]
            self._last_pressure[CONDITION_OF[th.signal]] = (
                now,
                f"{th.signal} is {o.available}, below the threshold {th.value}",
            )
        for th in list(self._first_met):
            if th not in self._met:
                del self._first_met[th]
        due = []
        for th in met:
            first = self._first_met.setdefault(th, now)
            if th.hard or now - first >= th.grace_period:
                due.append(th)
        if not due:
            return []
        due.sort(key=lambda th: (_ORDER[CONDITION_OF[th.signal]], not th.hard))
        th = due[0]
        if CONDITION_OF[th.signal] == DISK_PRESSURE:
            self.reclaim(th.signal)
            obs = self.observe()
            if th not in self._thresholds_met(obs):
                log.info("eviction: %s relieved by reclaiming node resources", th.describe())
                return []
        available = obs[th.signal].available if th.signal in obs else 0
        capacity = obs[th.signal].capacity if th.signal in obs else 0
        shown = str(th.value) if th.value.percentage is not None else _bytes(th.value.of(capacity))
        for victim in rank(th.signal, self.pods()):
            message = eviction_message(th.signal, shown, available, victim)
            grace = 0 if th.hard else self.cfg.max_pod_grace_period
            log.warning("eviction: %s met; evicting pod %s: %s", th.describe(), victim.uid, message)
            if self.evict(victim, message, grace):
                return [victim.uid]
        log.warning("eviction: %s met and no pod to evict", th.describe())
        return []

    def pressures(self) -> list[Pressure]:
        """The pressure conditions now: a threshold met within the transition period."""
        now = self.now()
        out = []
        for cond, (seen, message) in sorted(self._last_pressure.items()):
            if now - seen < self.cfg.pressure_transition_period or any(
                CONDITION_OF[th.signal] == cond for th in self._met
            ):
                out.append(Pressure(cond, message))
        return out

    def thresholds_for(self, signal: str) -> list[Threshold]:
        return [th for th in self.cfg.thresholds if th.signal == signal]


def _bytes(n: int) -> str:
    if n and n % (1 << 30) == 0:
        return f"{n >> 30}Gi"
    if n and n % (1 << 20) == 0:
        return f"{n >> 20}Mi"
    return f"{n >> 10}Ki" if n % 1024 == 0 else str(n)
