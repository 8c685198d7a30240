"""Eviction thresholds (the kubelet's flags, defaults and errors) and the
order pods are evicted in (issue 20)."""

from __future__ import annotations

import pytest

from agent.eviction import thresholds as t
from agent.eviction.ranking import PodUsage, eviction_message, rank
from agent.eviction.thresholds import ThresholdError, parse_config, parse_duration

MI = 1 << 20


def test_kubelet_defaults_when_no_flag_is_given() -> None:
    cfg = parse_config()
    got = {th.signal: str(th.value) for th in cfg.thresholds}
    assert got == {
        "memory.available": str(100 * MI),
        "nodefs.available": "10%",
        "imagefs.available": "15%",
        "nodefs.inodesFree": "5%",
    }
    assert all(th.hard for th in cfg.thresholds)
    assert cfg.pressure_transition_period == 300.0


def test_a_given_hard_flag_replaces_the_defaults() -> None:
    cfg = parse_config(hard="memory.available<1Gi")
    assert [th.signal for th in cfg.thresholds] == ["memory.available"]
    assert cfg.thresholds[0].value.of(0) == 1 << 30
    assert parse_config(hard="").thresholds == ()


def test_soft_thresholds_grace_and_reclaim() -> None:
    cfg = parse_config(
        hard="memory.available<100Mi",
        soft="memory.available<300Mi,nodefs.available<15%",
        soft_grace="memory.available=1m30s,nodefs.available=2m",
        minimum_reclaim="memory.available=0Mi,nodefs.available=500Mi",
        pressure_transition="30s",
    )
    soft = {th.signal: th for th in cfg.thresholds if not th.hard}
    assert soft["memory.available"].grace_period == 90.0
    assert soft["nodefs.available"].grace_period == 120.0
    assert soft["nodefs.available"].value.of(1000) == 150
    assert soft["nodefs.available"].min_reclaim is not None
    assert soft["nodefs.available"].min_reclaim.of(0) == 500 * MI
    assert cfg.hard("memory.available") is not None and cfg.pressure_transition_period == 30.0


@pytest.mark.parametrize(
    ("kwargs", "flag"),
    [
        ({"hard": "memory.available<abc"}, "--eviction-hard"),  # the bad input
        ({"hard": "memory.available>1Gi"}, "--eviction-hard"),
        ({"hard": "memory.free<1Gi"}, "--eviction-hard"),
        ({"hard": "nodefs.available<150%"}, "--eviction-hard"),
        ({"hard": "nodefs.available<0%"}, "--eviction-hard"),
        ({"hard": "memory.available<-1Mi"}, "--eviction-hard"),
        ({"hard": "memory.available<1Mi,memory.available<2Mi"}, "--eviction-hard"),
        ({"soft": "memory.available<1Gi"}, "--eviction-soft"),  # no grace period
        ({"soft_grace": "memory.available=1m"}, "--eviction-soft-grace-period"),
        (
            {"soft": "memory.available<1Gi", "soft_grace": "memory.available=soon"},
            "--eviction-soft-grace-period",
        ),
        ({"minimum_reclaim": "memory.available=lots"}, "--eviction-minimum-reclaim"),
        ({"pressure_transition": "5 minutes"}, "--eviction-pressure-transition-period"),
    ],
)
def test_bad_flags_name_the_flag(kwargs: dict[str, str], flag: str) -> None:
    with pytest.raises(ThresholdError) as err:
        parse_config(**kwargs)  # type: ignore[arg-type]
    assert str(err.value).startswith(flag), str(err.value)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("5m0s", 300.0), ("1m30s", 90.0), ("90s", 90.0), ("1.5h", 5400.0), ("500ms", 0.5), ("0", 0.0)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_memory_ranking_as_the_kubelet() -> None:
    best_effort = PodUsage("be", memory=50 * MI)
    burstable_over = PodUsage("bu-over", memory=300 * MI, memory_request=100 * MI)
    burstable_under = PodUsage("bu-under", memory=50 * MI, memory_request=100 * MI)
    guaranteed = PodUsage("g", memory=400 * MI, memory_request=512 * MI)
    low_prio_over = PodUsage("low", memory=20 * MI, memory_request=10 * MI, priority=-10)
    critical = PodUsage("crit", memory=900 * MI, priority=2_000_001_000)
    static = PodUsage("static", memory=900 * MI, critical=True)
    got = rank(
        t.MEMORY_AVAILABLE,
        [guaranteed, burstable_under, best_effort, critical, burstable_over, low_prio_over, static],
    )
    # Over their requests first (lower priority first, then most above the
    # request), then those within them; critical and static pods never.
    assert [p.uid for p in got] == ["low", "bu-over", "be", "bu-under", "g"]


def test_pid_and_disk_ranking() -> None:
    a = PodUsage("a", processes=10)
    b = PodUsage("b", processes=100)
    c = PodUsage("c", processes=500, priority=100)
    assert [p.uid for p in rank(t.PID_AVAILABLE, [a, b, c])] == ["b", "a", "c"]
    d = PodUsage("d", disk=5 * MI, disk_request=10 * MI)
    e = PodUsage("e", disk=2 * MI)
    assert [p.uid for p in rank(t.NODEFS_AVAILABLE, [d, e])] == ["e", "d"]


def test_the_message_names_the_signal() -> None:
    msg = eviction_message(t.MEMORY_AVAILABLE, "100Mi", 80 * MI, PodUsage("x", memory=300 * MI))
    assert "low on resource: memory" in msg and "memory.available" in msg and "100Mi" in msg


def test_an_invalid_threshold_flag_stops_the_agent_at_start() -> None:
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    res = subprocess.run(
        [sys.executable, str(repo / "skiff.py"), "agent", "--eviction-hard", "memory.available<abc",
         "--server", "127.0.0.1:1", "--token", "x", "--ca-file", "/nonexistent"],
        capture_output=True, text=True, timeout=60, cwd=repo, check=False,
    )  # fmt: skip
    assert res.returncode != 0
    assert "--eviction-hard" in res.stderr and "abc" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
