"""Client processes that start together, for the API benchmarks.

A `Crowd` spawns one process per argument tuple; each target takes its own
arguments and then `ready, go, out`: it puts one item on `ready` when its
threads are set up, waits for `go` before the timed part, and puts its
results on `out`. `in_threads` is that child side for N worker threads.
"""

from __future__ import annotations

import multiprocessing as mp
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any


def shares(clients: int, most: int = 4) -> list[int]:
    """`clients` spread over at most `most` processes, as evenly as they go."""
    n = min(clients, most)
    return [clients // n + (1 if i < clients % n else 0) for i in range(n)]


class Crowd:
    def __init__(self, target: Callable[..., None], args: Sequence[tuple[Any, ...]]) -> None:
        ctx = mp.get_context("spawn")
        self.ready, self.out, self.go = ctx.Queue(), ctx.Queue(), ctx.Event()
        self.procs = [
            ctx.Process(target=target, args=(*a, self.ready, self.go, self.out)) for a in args
        ]

    def start(self, settle: float = 0.0) -> None:
        """Start every process, wait until each is ready, then let them go."""
        for p in self.procs:
            p.start()
        for _ in self.procs:
            self.ready.get(timeout=120)
        if settle:
            time.sleep(settle)  # let every thread reach go.wait(); not a wait for an effect
        self.go.set()

    def results(self, timeout: float) -> list[Any]:
        """Every process's results (each puts a list), joined."""
        gathered: list[Any] = []
        for _ in self.procs:
            gathered += self.out.get(timeout=timeout)
        for p in self.procs:
            p.join(30)
        return gathered


def in_threads(
    work: Callable[[int], None], threads: int, ready: Any, results: Any, out: Any,
    join_timeout: float | None = None,
) -> None:  # fmt: skip
    """Run `work(t)` in `threads` threads, report ready, and put `results` when all end."""
    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    ready.put(threads)
    for w in workers:
        w.join(join_timeout)
    out.put(results)


def ops_per_second(results: list[tuple[float, float, int]]) -> float:
    """Operations per second over the span every client ran (perf_counter is
    system-wide: CLOCK_MONOTONIC)."""
    start = min(r[0] for r in results)
    end = max(r[1] for r in results)
    return sum(r[2] for r in results) / (end - start)


def paced(events: int, rate: float, send: Callable[[int], None]) -> None:
    """Call send(i) for each event, `rate` a second."""
    interval = 1.0 / rate
    next_at = time.perf_counter()
    for i in range(events):
        next_at += interval
        delay = next_at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)  # pacing the writer at `rate`, not waiting for an effect
        send(i)


def p50_p99_ms(latencies: list[float]) -> tuple[float, float]:
    latencies = sorted(latencies)
    return statistics.median(latencies) * 1000, latencies[int(len(latencies) * 0.99) - 1] * 1000
