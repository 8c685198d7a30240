"""The layered workqueue: dedup, one worker per key, delays, rate limits, shutdown."""

from __future__ import annotations

import threading

import pytest

from controlplane.client.workqueue import (
    BucketRateLimiter,
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    Queue,
    RateLimitingQueue,
    ShutDown,
)
from machinery.clock import FakeClock
from tests.harness.wait import wait_for


def test_dedup_and_fifo() -> None:
    q: Queue[str] = Queue()
    for k in ["a", "b", "a", "c", "b"]:
        q.add(k)
    assert len(q) == 3
    assert [q.get(), q.get(), q.get()] == ["a", "b", "c"]


def test_item_added_while_processing_is_requeued_after_done() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    assert q.get() == "a"
    q.add("a")
    q.add("a")
    assert len(q) == 0  # not handed to a second worker meanwhile
    with pytest.raises(TimeoutError):
        q.get(timeout=0)
    q.done("a")
    assert len(q) == 1
    assert q.get() == "a"
    q.done("a")
    assert len(q) == 0 and q.processing() == 0


def test_shutdown_wakes_blocked_getters_and_drops_new_items() -> None:
    q: Queue[str] = Queue()
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            q.get()
        except ShutDown as err:
            errors.append(err)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    q.shut_down()
    for t in threads:
        t.join(5)
    assert len(errors) == 3
    q.add("x")
    assert len(q) == 0


def test_shutdown_hands_out_remaining_items_then_raises() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    q.shut_down()
    assert q.get() == "a"
    with pytest.raises(ShutDown):
        q.get()


def test_shut_down_with_drain_waits_for_done() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    item = q.get()
    assert q.shut_down_with_drain(timeout=0) is False
    q.done(item)
    assert q.shut_down_with_drain(timeout=5) is True


def test_workers_never_process_one_key_concurrently() -> None:
    q: Queue[int] = Queue()
    active: set[int] = set()
    overlap: list[int] = []
    processed: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        while True:
            try:
                k = q.get()
            except ShutDown:
                return
            with lock:
                if k in active:
                    overlap.append(k)
                active.add(k)
            with lock:
                active.discard(k)
                processed.append(k)
            q.done(k)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for i in range(2000):
        q.add(i % 7)
    wait_for(lambda: len(q) == 0 and q.processing() == 0)
    q.shut_down()
    for t in threads:
        t.join(5)
    assert overlap == []
    assert set(processed) == set(range(7))


def test_delaying_queue_uses_clock_and_keeps_earliest() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock)
    q.add_after("a", 10)
    q.add_after("a", 5)  # earlier wins
    q.add_after("a", 20)  # later ignored
    q.add_after("b", 0)  # immediate
    assert len(q) == 1 and q.waiting() == 1
    clock.step(4.9)
    assert len(q) == 1
    clock.step(0.1)
    assert len(q) == 2 and q.waiting() == 0
    clock.step(100)
    assert len(q) == 2
    q.add_after("c", 1)
    q.shut_down()
    clock.step(5)
    assert q.waiting() == 0 and clock.pending() == 0


def test_exponential_failure_rate_limiter() -> None:
    rl: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.01, 0.05)
    assert [rl.when("a") for _ in range(5)] == [0.01, 0.02, 0.04, 0.05, 0.05]
    assert rl.when("b") == 0.01
    assert rl.num_requeues("a") == 5
    rl.forget("a")
    assert rl.num_requeues("a") == 0 and rl.when("a") == 0.01


def test_bucket_rate_limiter_on_clock() -> None:
    clock = FakeClock()
    rl: BucketRateLimiter[str] = BucketRateLimiter(qps=2, burst=2, clock=clock)
    assert [rl.when("x"), rl.when("y")] == [0.0, 0.0]
    assert rl.when("z") == 0.5
    clock.step(10)
    assert rl.when("z") == 0.0


def test_rate_limiting_queue_backoff_and_forget() -> None:
    clock = FakeClock()
    limiter = MaxOfRateLimiter(ItemExponentialFailureRateLimiter[str](1.0, 60.0))
    q: RateLimitingQueue[str] = RateLimitingQueue(limiter, clock)
    q.add_rate_limited("k")  # 1 s
    clock.step(0.5)
    assert len(q) == 0
    clock.step(0.5)
    assert q.get() == "k"
    q.done("k")
    q.add_rate_limited("k")  # 2 s
    clock.step(1.9)
    assert len(q) == 0
    clock.step(0.1)
    assert len(q) == 1 and q.num_requeues("k") == 2
    q.forget("k")
    assert q.num_requeues("k") == 0


def test_default_rate_limiter_first_retry_is_fast() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue(clock=FakeClock())
    assert q.rate_limiter.when("a") == 0.005
