"""FakeClock and RealClock timers."""

from __future__ import annotations

import threading

from machinery.clock import FakeClock, RealClock
from tests.harness.wait import wait_for


def test_fake_clock_fires_due_timers_in_order() -> None:
    clock = FakeClock(start=100.0)
    fired: list[str] = []
    clock.call_later(2, lambda: fired.append("b"))
    clock.call_later(1, lambda: fired.append("a"))
    cancelled = clock.call_later(1.5, lambda: fired.append("x"))
    assert cancelled.cancel()
    clock.step(0.5)
    assert fired == []
    clock.step(1.6)
    assert fired == ["a", "b"]
    assert clock.now() == 102.1
    assert clock.pending() == 0


def test_fake_clock_timer_scheduled_by_timer_fires_in_same_step() -> None:
    clock = FakeClock()
    fired: list[float] = []

    def first() -> None:
        fired.append(clock.now())
        clock.call_later(1, lambda: fired.append(clock.now()))

    clock.call_later(1, first)
    clock.step(5)
    assert fired == [clock.now() - 4, clock.now() - 3]


def test_fake_clock_sleep_wakes_on_step_and_on_stop() -> None:
    clock = FakeClock()
    results: list[bool] = []
    t = threading.Thread(target=lambda: results.append(clock.sleep(10)))
    t.start()
    wait_for(lambda: clock.waiters() == 1)
    clock.step(9)
    assert t.is_alive()
    clock.step(1)
    t.join(5)
    assert results == [False]

    stop = threading.Event()
    t = threading.Thread(target=lambda: results.append(clock.sleep(10, stop)))
    t.start()
    wait_for(lambda: clock.waiters() == 1)
    stop.set()
    t.join(5)
    assert results == [False, True]


def test_real_clock_call_later_runs_callback() -> None:
    clock = RealClock()
    done = threading.Event()
    clock.call_later(0.01, done.set)
    assert done.wait(5)
    never = threading.Event()
    timer = clock.call_later(30, never.set)
    assert timer.cancel()
    assert not timer.cancel()
    stop = threading.Event()
    stop.set()
    assert clock.sleep(30, stop) is True
