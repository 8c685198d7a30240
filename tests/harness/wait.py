"""Waiting on conditions instead of sleeping.

Tests never `time.sleep()` to let something happen: they poll a condition
until it holds or a deadline passes, and the failure names what was awaited.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """The awaited condition did not hold before the deadline."""


def wait_for(
    condition: Callable[[], T],
    timeout: float = 10.0,
    interval: float = 0.02,
    message: str = "",
) -> T:
    """Call `condition` until it returns something truthy; return that value.

    Exceptions raised by `condition` count as "not yet" until the deadline;
    then the last one is chained to the WaitTimeout so the cause is visible.
    """
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    delay = min(interval, 0.005)
    while True:
        try:
            value = condition()
            if value:
                return value
            last_exc = None
        except Exception as exc:
            last_exc = exc
        if time.monotonic() >= deadline:
            what = message or getattr(condition, "__name__", "condition")
            raise WaitTimeout(f"timed out after {timeout:.1f}s waiting for {what}") from last_exc
        time.sleep(delay)  # polling interval, not a wait for an effect
        delay = min(delay * 2, interval)
