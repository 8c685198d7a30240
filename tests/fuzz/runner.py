"""Running a fuzz target for N inputs with Hypothesis and counting what
happened: inputs, rejections (clear errors), crashes (anything else), hangs
(an input over its time limit), and fds, threads and mounts left behind."""

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

    try:
        with target.session():
            feed()
    finally:
        signal.signal(signal.SIGALRM, old)
    stats.leaked_fds = max(0, open_fds() - fds)
    stats.leaked_threads = max(0, threading.active_count() - threads)
    stats.leaked_mounts = max(0, mounts() - mnts)
    return stats
