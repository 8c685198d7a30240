"""Polling a condition with a deadline (tests/harness/wait.py), on a fake clock."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.harness import wait
from tests.harness.wait import WaitTimeout, wait_for


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    fake = SimpleNamespace(monotonic=c.monotonic, sleep=c.sleep)
    monkeypatch.setattr("tests.harness.wait.time", fake)
    return c


def test_a_default_wait_backs_off_to_fast_polls_then_slow_after_a_second(clock: Clock) -> None:
    until = clock.now + 3.0
    assert wait_for(lambda: clock.now >= until, timeout=10)
    assert clock.sleeps[:4] == [0.005, 0.01, 0.02, 0.02]
    first_second = [s for i, s in enumerate(clock.sleeps) if sum(clock.sleeps[:i]) < 1.0]
    assert max(first_second) == wait.FAST
    assert clock.sleeps[-1] == wait.SLOW
    # 1 s at 20 ms and 2 s at 100 ms: about 70 polls, not 150.
    assert len(clock.sleeps) < 75


def test_an_explicit_interval_is_kept_to_the_deadline(clock: Clock) -> None:
    with pytest.raises(WaitTimeout, match="the impossible"):
        wait_for(lambda: False, timeout=3.0, interval=0.02, message="the impossible")
    assert max(clock.sleeps) == 0.02
    assert clock.sleeps[-1] == 0.02
