"""The control plane's CPU time around a benchmark's runs: a figure the
other load on a shared machine changes far less than wall times."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

from bench.apiserver import Server

T = TypeVar("T")


def cpu_seconds(server: Server) -> float:
    """The control plane's CPU time so far (user + system): a figure the
    other load on a shared machine changes far less than wall times."""
    times = server.ps.cpu_times()
    return float(times.user + times.system)


def on_cpu(server: Server, run: Callable[[], T]) -> tuple[T, float]:
    """`run()`'s result and the control plane's CPU seconds meanwhile."""
    start = cpu_seconds(server)
    result = run()
    return result, cpu_seconds(server) - start


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
