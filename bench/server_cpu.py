"""The control plane's CPU time around a benchmark's runs: a figure the
other load on a shared machine changes far less than wall times.

The process's user + system time (/proc/PID/stat) counts in clock ticks,
10 ms here: over a block of 750 creates (about 0.65 s of the server's CPU)
one tick is 1.5% of the figure, as much as the difference some benchmarks
look for. A mark also reads each thread's run time in nanoseconds
(/proc/PID/task/TID/schedstat), and the CPU since the mark is their sum
when it can be trusted: every thread of the mark still alive (a thread
that ended took its time with it) and the sum within a few ticks of the
tick count (a thread started and ended in between is in the ticks only).
Otherwise the ticks.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import TypeVar

import psutil

from bench.apiserver import Server

T = TypeVar("T")
TICK = 1.0 / os.sysconf("SC_CLK_TCK")


def thread_times(pid: int) -> dict[int, int]:
    """Each live thread's time on a CPU so far, in nanoseconds, by thread id
    (none when the kernel keeps no schedstat)."""
    out: dict[int, int] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                out[int(tid)] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # ended since the listing
    return out


class CpuMark:
    """The CPU time of process `pid` (a control plane's) from now on
    (`seconds()`), to the nanosecond where its threads' own counts can be
    trusted (above)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.process = psutil.Process(pid)
        self.ticks = self._ticks()
        self.threads = thread_times(pid)

    def _ticks(self) -> float:
        times = self.process.cpu_times()
        return float(times.user + times.system)

    def seconds(self) -> float:
        ticks = self._ticks() - self.ticks
        now = thread_times(self.pid)
        if not self.threads or not self.threads.keys() <= now.keys():
            return ticks
        precise = sum(ns - self.threads.get(tid, 0) for tid, ns in now.items()) / 1e9
        # Each of the two tick counts is up to a tick short, and the kernel
        # rounds a thread's share of user and system time per thread.
        if abs(precise - ticks) > 3 * TICK + 0.02 * ticks:
            return ticks
        return precise


def on_cpu(server: Server, run: Callable[[], T]) -> tuple[T, float]:
    """`run()`'s result and the control plane's CPU seconds meanwhile."""
    mark = CpuMark(server.proc.pid)
    result = run()
    return result, mark.seconds()


def abba(
    server: Server, a: str, b: str, rate: Callable[[str], float]
) -> tuple[dict[str, float], dict[str, float]]:
    """`rate(mode)` in the order a, b, b, a, so drift of a shared machine
    (and of the store as it grows) falls on both alike: each mode's mean
    rate, and the control plane's CPU seconds over its two rounds."""
    rates: dict[str, list[float]] = {a: [], b: []}
    cpu: dict[str, float] = {a: 0.0, b: 0.0}
    for mode in (a, b, b, a):
        value, seconds = on_cpu(server, partial(rate, mode))
        rates[mode].append(value)
        cpu[mode] += seconds
    return {mode: sum(values) / 2 for mode, values in rates.items()}, cpu
