"""A bounded map whose entries expire, and a budget of reviews: the caches
of review answers and the bound on reviews sent (the agent's webhook
authn/authz, the components' delegated authn/authz)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class TTLCache(Generic[T]):
    """A bounded map whose entries expire; the least recently used goes first."""

    def __init__(self, max_entries: int, clock: Callable[[], float]) -> None:
        self._max = max_entries
        self._clock = clock
        self._entries: OrderedDict[Any, tuple[float, T]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> tuple[bool, T | None]:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return False, None
            if found[0] <= self._clock():
                del self._entries[key]
                return False, None
            self._entries.move_to_end(key)
            return True, found[1]

    def put(self, key: Any, value: T, ttl: float) -> None:
        with self._lock:
            self._entries[key] = (self._clock() + ttl, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class OverBudget(Exception):
    """A review the budget does not allow now (the caller answers 429)."""


class ReviewBudget:
    """At most `max_in_flight` reviews at once and a token bucket of `burst`
    refilled at `rate` per second; `take()` False means refuse, not wait."""

    def __init__(
        self, max_in_flight: int, rate: float, burst: int, clock: Callable[[], float]
    ) -> None:
        self._max = max_in_flight
        self._rate = rate
        self._burst = float(burst)
        self._tokens = float(burst)
        self._clock = clock
        self._last = clock()
        self._in_flight = 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            now = self._clock()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)
            self._last = now
            if self._in_flight >= self._max or self._tokens < 1.0:
                return False
            self._tokens -= 1.0
            self._in_flight += 1
            return True

    def done(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def spend(self, review: Callable[[], T]) -> T:
        """`review()` as one review of the budget; OverBudget, without
        calling it, when the budget does not allow one now."""
        if not self.take():
            raise OverBudget()
        try:
            return review()
        finally:
            self.done()
