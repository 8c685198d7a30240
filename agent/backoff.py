"""Crash-loop backoff per container, as the kubelet keeps it.

The first restart after an exit is immediate; each later one waits, counted
from the container's last exit, 10 s, then 20 s, 40 s ... up to 5 min. A
container that ran for 10 minutes before exiting starts over. The clock is
injected; nothing here sleeps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

INITIAL = 10.0
MAXIMUM = 300.0
RESET_AFTER = 600.0


@dataclass(eq=False)
class Backoff:
    now: Callable[[], float]
    initial: float = INITIAL
    maximum: float = MAXIMUM
    reset_after: float = RESET_AFTER
    _delay: dict[str, float] = field(default_factory=dict, init=False)

    def remaining(self, key: str, finished_at: float, ran_for: float = 0.0) -> float:
        """Seconds until `key`, which exited at `finished_at` (clock time)
        after running `ran_for` seconds, may start again; 0 means now."""
        if ran_for >= self.reset_after:
            self._delay.pop(key, None)
        delay = self._delay.get(key)
        if delay is None:
            return 0.0
        return max(0.0, delay - (self.now() - finished_at))

    def delay(self, key: str) -> float:
        """The current backoff of `key` (0 before its first restart)."""
        return self._delay.get(key, 0.0)

    def restarted(self, key: str) -> None:
        """Record a restart of `key`: the next one waits twice as long."""
        delay = self._delay.get(key)
        self._delay[key] = self.initial if delay is None else min(delay * 2, self.maximum)

    def forget(self, key: str) -> None:
        self._delay.pop(key, None)
