"""Running a fuzz target for N inputs with Hypothesis and counting what
happened: inputs, rejections (clear errors), crashes (anything else), hangs
(an input over its time limit), fds, threads and mounts left behind, and
for a target with a memory limit the most memory one input took (the
process's resident high-water mark, reset before each input through
/proc/self/clear_refs, over its resident size then) and the inputs past
the limit."""

from __future__ import annotations

import signal
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings

from tests.fuzz.targets import Target, mounts, open_fds


class Hang(Exception):
    pass


@dataclass
class Stats:
    name: str
    inputs: int = 0
    rejections: int = 0
    crashes: int = 0
    hangs: int = 0
    leaked_fds: int = 0
    leaked_threads: int = 0
    leaked_mounts: int = 0
    peak_bytes: int = -1  # -1: not measured
    over_memory: int = 0
    first_crash: str = ""
    examples: list[str] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        return {
            "inputs": self.inputs,
            "rejections": self.rejections,
            "crashes": self.crashes,
            "hangs": self.hangs,
            "leaked_fds": self.leaked_fds,
            "leaked_threads": self.leaked_threads,
            "leaked_mounts": self.leaked_mounts,
            "peak_mib": round(self.peak_bytes / (1 << 20), 1) if self.peak_bytes >= 0 else "-",
            "over_memory": self.over_memory if self.peak_bytes >= 0 else "-",
        }


def _alarm(*_: Any) -> None:
    raise Hang


def run(target: Target, n: int, rng_seed: int, time_limit: float = 5.0) -> Stats:
    """Feed `target` `n` generated inputs (deterministic for a seed)."""
    stats = Stats(target.name)
    fds, threads, mnts = open_fds(), threading.active_count(), mounts()
    old = signal.signal(signal.SIGALRM, _alarm)

    @seed(rng_seed)
    @settings(
        max_examples=n,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        derandomize=False,
    )
    @given(target.strategy)
    def feed(inp: Any) -> None:
        stats.inputs += 1
        if target.memory_limit:
            base = _reset_peak_rss()
        signal.setitimer(signal.ITIMER_REAL, time_limit)
        try:
            if target.check(inp) == "rejected":
                stats.rejections += 1
        except Hang:
            stats.hangs += 1
        except Exception:
            stats.crashes += 1
            if not stats.first_crash:
                stats.first_crash = f"input {inp!r:.400}\n{traceback.format_exc()}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if target.memory_limit:
            peak = _status_kib("VmHWM") * 1024 - base
            stats.peak_bytes = max(stats.peak_bytes, peak)
            if peak > target.memory_limit:
                stats.over_memory += 1

    try:
        with target.session():
            feed()
    finally:
        signal.signal(signal.SIGALRM, old)
    stats.leaked_fds = max(0, open_fds() - fds)
    stats.leaked_threads = max(0, threading.active_count() - threads)
    stats.leaked_mounts = max(0, mounts() - mnts)
    return stats


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(field)


def _reset_peak_rss() -> int:
    """Reset the resident high-water mark to the resident size; that size, in bytes."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_kib("VmRSS") * 1024
