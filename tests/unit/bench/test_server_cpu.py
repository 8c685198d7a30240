"""bench.server_cpu.CpuMark: a process's CPU time since a mark, to the
nanosecond from its threads' counts, and the clock ticks when a thread of
the mark has ended."""

from __future__ import annotations

import os
import threading
import time

from bench.server_cpu import TICK, CpuMark, thread_times
from tests.harness.wait import wait_for


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_thread_times_lists_this_thread() -> None:
    times = thread_times(os.getpid())
    assert threading.get_native_id() in times
    assert all(ns >= 0 for ns in times.values())


def test_seconds_is_finer_than_a_tick() -> None:
    mark = CpuMark(os.getpid())
    start = time.thread_time()
    _spin(0.035)
    spent = time.thread_time() - start
    seconds = mark.seconds()
    # Ticks would read 30 or 40 ms; the threads' counts read the 35 this
    # thread spun and what else ran here meanwhile (a few ms at most).
    assert spent <= seconds < spent + TICK / 2, (spent, seconds)


def test_a_thread_that_ended_leaves_the_ticks() -> None:
    go, done = threading.Event(), threading.Event()

    def work() -> None:
        go.wait(10)
        _spin(0.05)
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    mark = CpuMark(os.getpid())
    assert worker.native_id in mark.threads
    go.set()
    assert done.wait(10)
    worker.join(10)
    # join() returns before the kernel has reaped the thread: until then its
    # count is still there to read (and right).
    wait_for(lambda: not os.path.exists(f"/proc/self/task/{worker.native_id}"), timeout=10,
             message="the thread gone from /proc")  # fmt: skip
    seconds = mark.seconds()
    # The ended thread's 50 ms are gone from the threads' counts, kept in
    # the process's ticks: a whole number of them.
    assert abs(seconds - 0.05) <= 3 * TICK, seconds
    assert abs(seconds / TICK - round(seconds / TICK)) < 1e-6, seconds
