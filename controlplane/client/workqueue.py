"""The workqueue controllers feed keys into, layered as client-go's.

`Queue`: a FIFO of distinct items. An item added while queued is not queued
twice; an item being processed (between `get()` and `done()`) is never handed
to a second worker; if it is added meanwhile it is marked dirty and queued
again when `done()` is called, so no change is lost and no key is reconciled
by two workers at once.

`DelayingQueue`: adds `add_after(item, delay)` on an injected clock; an item
waiting twice keeps the earlier time.

`RateLimitingQueue`: adds `add_rate_limited(item)` whose delay a
`RateLimiter` chooses (per-item exponential backoff, a token bucket, or the
max of several, as `default_controller_rate_limiter()` combines them),
`forget(item)` to reset an item's backoff after a success, and
`num_requeues(item)`.

`shut_down()` wakes every blocked `get()` with `ShutDown`; items added after
it are dropped. `work(queue, handle, failed)` is a worker's loop until then.
Nothing here calls the API server.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from machinery.clock import Clock, RealClock, Timer

T = TypeVar("T", bound=Hashable)


class QueueObserver(Protocol):
    """What a queue tells its metrics (client-go's workqueue metrics provider)."""

    def added(self) -> None: ...

    def queued(self, seconds: float) -> None: ...  # from add to get

    def worked(self, seconds: float) -> None: ...  # from get to done

    def retried(self) -> None: ...


class ShutDown(Exception):
    """The queue was shut down: the worker should return."""


class Queue(Generic[T]):
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._shutting_down = False
        self._drain = False
        # Set before the queue is used: then adds, waits and work are timed.
        self.observer: QueueObserver | None = None
        self._added_at: dict[T, float] = {}
        self._started_at: dict[T, float] = {}

    def add(self, item: T) -> None:
        with self._cond:
            if self._shutting_down or item in self._dirty:
                return
            self._dirty.add(item)
            if self.observer is not None:
                self.observer.added()
                self._added_at.setdefault(item, time.monotonic())
            if item in self._processing:
                return
            self._queue.append(item)
            self._cond.notify()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

    def get(self, timeout: float | None = None) -> T:
        """The next item, marked as processing. Blocks while the queue is empty.

        Raises ShutDown once the queue is shut down and empty, and TimeoutError
        when `timeout` seconds pass with nothing to hand out.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._queue and not self._shutting_down:
                if deadline is None:
                    self._cond.wait()
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise TimeoutError("workqueue: nothing to get")
                    self._cond.wait(remaining)
            if not self._queue:
                raise ShutDown()
            item = self._queue.popleft()
            self._processing.add(item)
            self._dirty.discard(item)
            if self.observer is not None:
                now = time.monotonic()
                self.observer.queued(now - self._added_at.pop(item, now))
                self._started_at[item] = now
            return item

    def done(self, item: T) -> None:
        """Mark `item` processed; if it was added meanwhile, queue it again."""
        with self._cond:
            self._processing.discard(item)
            started = self._started_at.pop(item, None)
            if self.observer is not None and started is not None:
                self.observer.worked(time.monotonic() - started)
            if item in self._dirty:
                self._queue.append(item)
                self._cond.notify()
            elif not self._processing:
                self._cond.notify_all()

    def processing(self) -> int:
        with self._cond:
            return len(self._processing)

    def shut_down(self) -> None:
        """Stop accepting items; blocked and later `get()`s raise ShutDown once empty."""
        with self._cond:
            self._shutting_down = True
            self._cond.notify_all()

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        """Shut down, then wait until every item handed out is `done()`."""
        self.shut_down()
        with self._cond:
            return self._cond.wait_for(lambda: not self._processing, timeout)

    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutting_down


class DelayingQueue(Queue[T]):
    def __init__(self, clock: Clock | None = None) -> None:
        super().__init__()
        self.clock: Clock = clock or RealClock()
        self._waiting: dict[T, tuple[float, Timer]] = {}
        self._wlock = threading.Lock()

    def add_after(self, item: T, delay: float) -> None:
        """Add `item` once `delay` seconds have passed on the clock (now if <= 0)."""
        if self.shutting_down():
            return
        if delay <= 0:
            self.add(item)
            return
        when = self.clock.monotonic() + delay
        with self._wlock:
            existing = self._waiting.get(item)
            if existing is not None:
                if existing[0] <= when:
                    return
                existing[1].cancel()
            holder: list[Timer] = []

            def fire() -> None:
                with self._wlock:
                    current = self._waiting.get(item)
                    if current is None or not holder or current[1] is not holder[0]:
                        return
                    del self._waiting[item]
                self.add(item)

            timer = self.clock.call_later(delay, fire)
            holder.append(timer)
            self._waiting[item] = (when, timer)

    def waiting(self) -> int:
        """How many items wait for their delay."""
        with self._wlock:
            return len(self._waiting)

    def shut_down(self) -> None:
        super().shut_down()
        with self._wlock:
            for _, timer in self._waiting.values():
                timer.cancel()
            self._waiting.clear()


class RateLimiter(Protocol[T]):  # type: ignore[misc]
    def when(self, item: T) -> float:
        """How long `item` must wait now (and count one more failure)."""
        ...

    def forget(self, item: T) -> None: ...

    def num_requeues(self, item: T) -> int: ...


class ItemExponentialFailureRateLimiter(Generic[T]):
    """base * 2**failures per item, capped at `cap` seconds."""

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        self.base = base
        self.cap = cap
        self._lock = threading.Lock()
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        with self._lock:
            n = self._failures.get(item, 0)
            self._failures[item] = n + 1
        if n > 64:
            return self.cap
        return float(min(self.cap, self.base * (2**n)))

    def forget(self, item: T) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class BucketRateLimiter(Generic[T]):
    """An overall token bucket: `qps` tokens a second, at most `burst` saved up."""

    def __init__(self, qps: float = 10.0, burst: int = 100, clock: Clock | None = None) -> None:
        self.qps = qps
        self.burst = burst
        self.clock: Clock = clock or RealClock()
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = self.clock.monotonic()

    def when(self, item: T) -> float:
        with self._lock:
            now = self.clock.monotonic()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            if self._tokens >= 0:
                return 0.0
            return -self._tokens / self.qps

    def forget(self, item: T) -> None:
        pass

    def num_requeues(self, item: T) -> int:
        return 0


class MaxOfRateLimiter(Generic[T]):
    """The longest delay any of its limiters asks for."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        self.limiters = limiters

    def when(self, item: T) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: T) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(clock: Clock | None = None) -> MaxOfRateLimiter[Hashable]:
    """client-go's default: per-item 5 ms doubling to 1000 s, overall 10 qps burst 100."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(10.0, 100, clock),
    )


class RateLimitingQueue(DelayingQueue[T]):
    def __init__(
        self, rate_limiter: RateLimiter[T] | None = None, clock: Clock | None = None
    ) -> None:
        super().__init__(clock)
        self.rate_limiter: RateLimiter[T] = (
            rate_limiter
            if rate_limiter is not None
            else default_controller_rate_limiter(self.clock)
        )

    def add_rate_limited(self, item: T) -> None:
        """Add `item` after the delay its rate limiter chooses (one more failure)."""
        if self.observer is not None:
            self.observer.retried()
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """The item succeeded: reset its backoff."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)


def work(
    queue: RateLimitingQueue[T],
    handle: Callable[[T], None],
    failed: Callable[[T, Exception], None],
) -> None:
    """A worker: handle each item until the queue shuts down. A success
    forgets the item's backoff; on an exception, `failed(item, err)` runs
    inside the handler (log.exception works there; it may add_rate_limited)."""
    while True:
        try:
            item = queue.get()
        except ShutDown:
            return
        try:
            handle(item)
            queue.forget(item)
        except Exception as err:
            failed(item, err)
        finally:
            queue.done(item)
