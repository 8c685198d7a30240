"""The eviction manager's synchronize loop with fake observations (issue 20)."""

from __future__ import annotations

from agent.eviction.manager import DISK_PRESSURE, MEMORY_PRESSURE, EvictionManager
from agent.eviction.ranking import PodUsage
from agent.eviction.signals import Observation
from agent.eviction.thresholds import parse_config

MI = 1 << 20
GI = 1 << 30


class World:
    def __init__(self) -> None:
        self.t = 0.0
        self.obs = {
            "memory.available": Observation(4 * GI, 8 * GI),
            "nodefs.available": Observation(50 * GI, 100 * GI),
        }
        self.pods = [
            PodUsage("guaranteed", memory=100 * MI, memory_request=200 * MI),
            PodUsage("besteffort", memory=500 * MI),
        ]
        self.evicted: list[tuple[str, str, int]] = []
        self.reclaimed: list[str] = []

    def manager(self, **flags: str) -> EvictionManager:
        return EvictionManager(
            parse_config(**flags),  # type: ignore[arg-type]
            lambda: dict(self.obs),
            lambda: list(self.pods),
            self.evict,
            self.reclaim,
            now=lambda: self.t,
        )

    def evict(self, victim: PodUsage, message: str, grace: int) -> bool:
        self.evicted.append((victim.uid, message, grace))
        self.pods = [p for p in self.pods if p.uid != victim.uid]
        return True

    def reclaim(self, signal: str) -> None:
        self.reclaimed.append(signal)


def test_hard_memory_threshold_evicts_besteffort_first() -> None:
    w = World()
    m = w.manager(hard="memory.available<1Gi")
    assert m.synchronize() == [] and m.pressures() == []
    w.obs["memory.available"] = Observation(512 * MI, 8 * GI)
    assert m.synchronize() == ["besteffort"]
    _, message, grace = w.evicted[0]
    assert grace == 0 and "memory.available" in message and "1Gi" in message
    assert [p.condition for p in m.pressures()] == [MEMORY_PRESSURE]
    assert m.synchronize() == ["guaranteed"]  # still below: the next one


def test_soft_threshold_waits_for_its_grace_period() -> None:
    w = World()
    m = w.manager(hard="", soft="memory.available<1Gi", soft_grace="memory.available=30s")
    w.obs["memory.available"] = Observation(512 * MI, 8 * GI)
    assert m.synchronize() == []
    assert [p.condition for p in m.pressures()] == [MEMORY_PRESSURE]  # pressure at once
    w.t = 29.0
    assert m.synchronize() == []
    w.t = 30.0
    assert m.synchronize() == ["besteffort"]


def test_pressure_is_held_for_the_transition_period_and_min_reclaim() -> None:
    w = World()
    m = w.manager(
        hard="memory.available<1Gi",
        minimum_reclaim="memory.available=512Mi",
        pressure_transition="1m",
    )
    w.obs["memory.available"] = Observation(900 * MI, 8 * GI)
    m.synchronize()
    w.pods = []  # nothing more to evict
    w.obs["memory.available"] = Observation(1200 * MI, 8 * GI)  # above 1Gi, below 1Gi+512Mi
    w.t = 10.0
    m.synchronize()
    assert [p.condition for p in m.pressures()] == [MEMORY_PRESSURE]
    w.obs["memory.available"] = Observation(2 * GI, 8 * GI)
    w.t = 20.0
    m.synchronize()
    w.t = 69.0
    assert [p.condition for p in m.pressures()] == [MEMORY_PRESSURE]
    w.t = 71.0
    assert m.pressures() == []


def test_disk_pressure_reclaims_before_evicting() -> None:
    w = World()
    m = w.manager(hard="nodefs.available<10%")
    w.obs["nodefs.available"] = Observation(5 * GI, 100 * GI)

    def reclaim(signal: str) -> None:
        w.reclaimed.append(signal)
        w.obs["nodefs.available"] = Observation(20 * GI, 100 * GI)

    m.reclaim = reclaim
    assert m.synchronize() == []
    assert w.reclaimed == ["nodefs.available"] and w.evicted == []
    assert [p.condition for p in m.pressures()] == [DISK_PRESSURE]
