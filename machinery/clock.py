"""Clocks: the one source of time for the client library and controllers.

Everything that waits or schedules (workqueue delays, rate limiters, leader
election, reflector backoff, informer resync, later HPA and CronJob) takes a
`Clock` instead of calling `time` directly, so tests drive time with
`FakeClock.step()` and never sleep. `RealClock` runs timers on one daemon
thread; `FakeClock` fires due timers synchronously inside `step()` and wakes
threads blocked in `sleep()`. Nothing here may import the transport or the
API server.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol


class Timer(Protocol):
    """A callback scheduled on a clock."""

    def cancel(self) -> bool:
        """Stop the timer; True if it had not fired yet."""
        ...


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (wall time, for timestamps)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (for durations)."""
        ...

    def utcnow(self) -> datetime: ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        """Run `callback` once, `delay` seconds from now, on the clock's thread."""
        ...

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        """Wait `seconds`, or less if `stop` gets set. Returns True if stopped."""
        ...


@dataclass(order=True)
class _Entry:
    when: float
    seq: int
    callback: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)
    fired: bool = field(default=False, compare=False)

    def cancel(self) -> bool:
        was_pending = not self.cancelled and not self.fired
        self.cancelled = True
        return was_pending


_seq = itertools.count()


class RealClock:
    """Wall time; timers run one after another on a lazily started daemon thread.

    Timer callbacks must be quick (enqueue an item, set an event): a slow
    callback delays every timer behind it.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[_Entry] = []
        self._thread: threading.Thread | None = None

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def utcnow(self) -> datetime:
        return datetime.now(UTC)

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        entry = _Entry(time.monotonic() + max(0.0, delay), next(_seq), callback)
        with self._cond:
            heapq.heappush(self._heap, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="skiff-clock", daemon=True)
                self._thread.start()
            self._cond.notify()
        return entry

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        if stop is None:
            time.sleep(max(0.0, seconds))
            return False
        return stop.wait(max(0.0, seconds))

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    while self._heap and self._heap[0].cancelled:
                        heapq.heappop(self._heap)
                    if not self._heap:
                        self._cond.wait()
                        continue
                    wait = self._heap[0].when - time.monotonic()
                    if wait <= 0:
                        entry = heapq.heappop(self._heap)
                        entry.fired = True
                        break
                    self._cond.wait(wait)
            try:
                entry.callback()
            except Exception:  # a bad callback must not kill the clock
                logging.getLogger(__name__).exception("timer callback failed")


class FakeClock:
    """A clock that moves only when a test calls `step()` or `set()`.

    `step()` fires every due timer in time order on the caller's thread (timers
    scheduled by those callbacks fire too if they fall due) and wakes threads
    blocked in `sleep()`; `waiters()` tells a test how many threads are asleep
    on this clock, so it can wait for a worker to reach its sleep before stepping.
    """

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._time = start
        self._cond = threading.Condition()
        self._heap: list[_Entry] = []
        self._waiters = 0
        self._sleeps = 0

    def now(self) -> float:
        with self._cond:
            return self._time

    def monotonic(self) -> float:
        return self.now()

    def utcnow(self) -> datetime:
        return datetime.fromtimestamp(self.now(), UTC)

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        with self._cond:
            entry = _Entry(self._time + max(0.0, delay), next(_seq), callback)
            heapq.heappush(self._heap, entry)
            return entry

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        with self._cond:
            deadline = self._time + max(0.0, seconds)
            self._waiters += 1
            self._sleeps += 1
            self._cond.notify_all()
            try:
                while self._time < deadline:
                    if stop is not None and stop.is_set():
                        return True
                    # Short real-time waits only so that `stop` set from
                    # another thread is noticed; time itself never advances here.
                    self._cond.wait(0.05 if stop is not None else None)
                return stop is not None and stop.is_set()
            finally:
                self._waiters -= 1

    def waiters(self) -> int:
        """How many threads are blocked in `sleep()` right now."""
        with self._cond:
            return self._waiters

    def sleeps(self) -> int:
        """How many `sleep()` calls have begun, ever (to tell one sleep from the next)."""
        with self._cond:
            return self._sleeps

    def pending(self) -> int:
        """How many timers have not fired or been cancelled."""
        with self._cond:
            return sum(1 for e in self._heap if not e.cancelled)

    def step(self, seconds: float) -> None:
        """Advance time by `seconds`, firing due timers in order."""
        with self._cond:
            target = self._time + seconds
        self._advance_to(target)

    def set(self, when: float) -> None:
        """Jump to `when` (never backwards), firing due timers."""
        self._advance_to(when)

    def _advance_to(self, target: float) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0].cancelled:
                    heapq.heappop(self._heap)
                if not self._heap or self._heap[0].when > target:
                    self._time = max(self._time, target)
                    self._cond.notify_all()
                    return
                entry = heapq.heappop(self._heap)
                entry.fired = True
                self._time = max(self._time, entry.when)
                self._cond.notify_all()
            entry.callback()
