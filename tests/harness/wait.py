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


# Without an `interval`: polls 5 ms apart, doubling to 20 ms, and after the
# first second to 100 ms. Most conditions are API calls or reads of a
# daemon's state, and a long wait at 50 polls a second cost the machine more
# CPU (client and server) than anything the test itself did; a tenth of a
# second late on a wait of seconds costs next to nothing.
FAST = 0.02
SLOW = 0.1
SLOW_AFTER = 1.0


def wait_for(
    condition: Callable[[], T],
    timeout: float = 10.0,
    interval: float | None = None,
    message: str = "",
) -> T:
    """Call `condition` until it returns something truthy; return that value.

    Polls at most `interval` apart once backed off (by default 20 ms, then
    100 ms after the first second). Exceptions raised by `condition` count
    as "not yet" until the deadline; then the last one is chained to the
    WaitTimeout so the cause is visible.
    """
    start = time.monotonic()
    deadline = start + timeout
    last_exc: BaseException | None = None
    cap = FAST if interval is None else interval
    delay = min(cap, 0.005)
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
        if interval is None and time.monotonic() - start >= SLOW_AFTER:
            cap = SLOW
        delay = min(delay * 2, cap)
