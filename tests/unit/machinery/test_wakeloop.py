"""WakeLoop: a wake-up cuts the wait short, stop ends the loop and joins it."""

from __future__ import annotations

import threading
import time

from machinery.wakeloop import WakeLoop


def test_wake_cuts_the_wait_short_and_stop_ends_the_loop() -> None:
    loop = WakeLoop()
    passes: list[float] = []
    passed = threading.Event()

    def run() -> None:
        while not loop.stopped():
            passes.append(time.monotonic())
            passed.set()
            loop.wait(3600)

    loop.start(run, "test-wakeloop")
    try:
        assert passed.wait(10)
        passed.clear()
        loop.wake()
        assert passed.wait(10), "a wake-up did not start the next pass"
    finally:
        loop.stop(10)
    assert loop.stopped()
    assert len(passes) == 2
    assert not any(t.name == "test-wakeloop" for t in threading.enumerate())


def test_a_wake_up_is_used_up_by_one_wait() -> None:
    loop = WakeLoop()
    loop.wake()
    start = time.monotonic()
    loop.wait(10)
    assert time.monotonic() - start < 5
    start = time.monotonic()
    loop.wait(0.05)
    assert time.monotonic() - start >= 0.05


def test_stop_before_start_is_safe() -> None:
    loop = WakeLoop()
    loop.stop()
    assert loop.stopped()
