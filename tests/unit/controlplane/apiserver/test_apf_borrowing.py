"""Borrowing between API priority and fairness levels (KEP-1040): the
division of the seats, the seat-demand summary, and FlowControl moving a
level's limit between what it may lend and what it may borrow."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

from controlplane.apiserver.apf_borrowing import (
    Bounds,
    DemandStats,
    Item,
    SeatDemand,
    allocate,
    round_half_away,
)
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.flowcontrol import FlowControl, Limits, Pending, digest


def test_bounds_from_the_percentages() -> None:
    assert Bounds.of(20, 50, None, 245) == Bounds(20, 10, 265)  # borrowing unset: the server
    assert Bounds.of(30, 33, 100, 245) == Bounds(30, 20, 60)  # round(9.9) = 10 lent
    assert Bounds.of(5, 0, 0, 245) == Bounds(5, 5, 5)
    assert Bounds.of(3, 50, None, 10) == Bounds(3, 1, 13)  # 1.5 rounds away from zero
    assert [round_half_away(x) for x in (0.5, 1.5, 2.5, -0.5)] == [1, 2, 3, -1]


def test_a_division_where_no_bound_matters_is_proportional() -> None:
    shares, fair = allocate(30, [Item(10, 0, 100), Item(20, 0, 100)])
    assert shares == pytest.approx([10, 20]) and fair == pytest.approx(1)
    shares, fair = allocate(60, [Item(10, 0, 100), Item(20, 0, 100)])
    assert shares == pytest.approx([20, 40]) and fair == pytest.approx(2)


def test_bounds_clamp_and_the_rest_is_shared_fairly() -> None:
    # The first may not go above 12: the other two share what is left by target.
    shares, fair = allocate(60, [Item(10, 0, 12), Item(10, 0, 100), Item(30, 0, 100)])
    assert shares == pytest.approx([12, 12, 36]) and fair == pytest.approx(1.2)
    # A floor above its fair share holds.
    shares, _ = allocate(20, [Item(10, 10, 10), Item(100, 0, 100)])
    assert shares == pytest.approx([10, 10])
    # Exactly the lower bounds, or the upper bounds.
    assert allocate(15, [Item(10, 5, 20), Item(20, 10, 30)])[0] == [5, 10]
    assert allocate(50, [Item(10, 5, 20), Item(20, 10, 30)])[0] == [20, 30]


def test_impossible_divisions_are_refused() -> None:
    with pytest.raises(ValueError, match="lower bounds add up to 15"):
        allocate(10, [Item(5, 5, 9), Item(10, 10, 10)])
    with pytest.raises(ValueError, match="upper bounds add up to 19"):
        allocate(20, [Item(5, 5, 9), Item(10, 10, 10)])
    with pytest.raises(ValueError, match="item 0"):
        allocate(10, [Item(1, 5, 9)])


def test_random_divisions_meet_every_condition() -> None:
    """Kubernetes' characterisation: the shares add up to the total, each
    stays within its bounds, and each is fair*target unless a bound holds it
    (then fair*target lies beyond that bound)."""
    rng = random.Random(1234)
    for _ in range(2000):
        items = []
        for _ in range(rng.choice([1, 2, 3, 5, 8])):
            lower = rng.choice([0.0, rng.uniform(0, 20)])
            target = lower + rng.choice([0.0, rng.uniform(0, 40)])
            items.append(Item(target, lower, lower + rng.uniform(0, 60)))
        low, high = sum(i.lower for i in items), sum(i.upper for i in items)
        total = float(rng.randint(int(low) + 1, max(int(high), int(low) + 1)))
        if total > high:
            continue
        shares, fair = allocate(total, items)
        assert sum(shares) == pytest.approx(total, abs=1e-6)
        for item, share in zip(items, shares, strict=True):
            assert item.lower - 1e-9 <= share <= item.upper + 1e-9
            want = fair * max(item.target, 0.001)
            if share == pytest.approx(want, abs=1e-6):
                continue
            assert (share == pytest.approx(item.lower) and want < item.lower) or (
                share == pytest.approx(item.upper) and want > item.upper
            ), (items, total, shares, fair)


def test_seat_demand_is_time_weighted() -> None:
    demand = SeatDemand(0.0)
    demand.set(0.0, 2)
    demand.set(5.0, 6)  # 2 seats for 5 s, then 6 for 5 s
    assert demand.reset(10.0) == pytest.approx((10.0, 4, 2, 6))
    # The next period starts at the value in force.
    assert demand.reset(20.0) == pytest.approx((10.0, 6, 0, 6))


def test_smoothed_demand_rises_at_once_and_decays_slowly() -> None:
    stats = DemandStats()
    stats.update(10.0, 8, 2, 12)
    assert (stats.smoothed, stats.high_watermark) == (10, 12)
    stats.update(10.0, 0, 0, 0)
    assert stats.smoothed == pytest.approx(10 * 0.977)
    item = stats.item(Bounds(20, 5, 40))
    assert (item.target, item.lower, item.upper) == pytest.approx((9.77, 5, 40))


def _level(name: str, shares: int, lendable: int, borrowing: int | None = None) -> Any:
    limited: dict[str, Any] = {
        "nominalConcurrencyShares": shares, "lendablePercent": lendable,
        "limitResponse": {"type": "Queue",
                          "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 50}}}  # fmt: skip
    if borrowing is not None:
        limited["borrowingLimitPercent"] = borrowing
    return {"metadata": {"name": name, "uid": f"uid-{name}"},
            "spec": {"type": "Limited", "limited": limited}}  # fmt: skip


def _schema(name: str, level: str, user: str) -> Any:
    return {"metadata": {"name": name, "uid": f"uid-{name}"},
            "spec": {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": 10,
                     "rules": [{"subjects": [{"kind": "User", "user": {"name": user}}],
                                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
                                                   "resources": ["*"],
                                                   "namespaces": ["*"]}]}]}}  # fmt: skip


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_busy_level_borrows_what_an_idle_one_lends_and_gives_it_back() -> None:
    """Two levels of 10 seats each: `lender` may lend 80%, `busy` may borrow
    up to 100%. While `lender` is idle and `busy` has 18 requests waiting or
    running, an adjustment moves seats to `busy`, whose waiters run at once;
    once `busy` is idle again its borrowed seats go back."""
    clock = Clock()
    flow = FlowControl(Limits(concurrency=20, queued_total=50, queue_wait=5.0), clock=clock)
    flow.configure([_schema("b", "busy", "bob"), _schema("l", "lender", "lou")],
                   [_level("busy", 10, 0, 100), _level("lender", 10, 80)])  # fmt: skip
    start = flow.level_limits()
    assert (start["busy"].nominal, start["busy"].lower, start["busy"].upper) == (10, 10, 20)
    assert (start["lender"].lower, start["lender"].upper) == (2, 30)
    # Idle: both targets are their floors (10 and 2), so the 20 seats go 10*20/12 : 2*20/12.
    assert (start["busy"].current, start["lender"].current) == (17, 3)

    bob = Identity("bob")
    got = [flow.admit(digest(bob, "get", "Pod", "default")) for _ in range(20)]
    running = [g for g in got if not isinstance(g, Pending)]
    waiting = [g for g in got if isinstance(g, Pending)]
    assert (len(running), len(waiting)) == (17, 3)
    clock.now = 10.0
    flow.adjust()
    limits = flow.level_limits()
    assert (limits["busy"].current, limits["lender"].current) == (18, 2)  # lender at its floor
    granted = [threading.Event() for _ in waiting]
    for pending, done in zip(waiting, granted, strict=True):
        threading.Thread(target=lambda p=pending, d=done: (p.wait(), d.set()), daemon=True).start()
    assert granted[0].wait(5)  # one more seat: the first waiter runs
    assert flow.inflight("busy") == 18
    assert not granted[1].is_set() and not granted[2].is_set()

    for seat in running:  # busy goes idle (its waiters run and finish too)
        flow.release(seat)
    for done in granted:
        assert done.wait(5)
    for pending in waiting:
        flow.release(pending.seat)
    assert flow.inflight("busy") == 0
    for step in range(1, 200):  # the smoothed demand decays: busy's seats go back
        clock.now = 10.0 + 10 * step
        flow.adjust()
        if flow.level_limits()["busy"].current == 17:
            break
    assert flow.level_limits()["busy"].current == 17


def test_a_lowered_limit_holds_waiters_until_the_level_is_under_it() -> None:
    """When `lender` gets busy too, both levels are cut to their floors
    (10 each): `busy`, running 17, passes no seat to its waiters until it
    runs fewer than 10, while `lender`'s waiters get its seats back at once."""
    clock = Clock()
    flow = FlowControl(Limits(concurrency=20, queued_total=50, queue_wait=5.0), clock=clock)
    flow.configure([_schema("b", "busy", "bob"), _schema("l", "lender", "lou")],
                   [_level("busy", 10, 0, 100), _level("lender", 10, 80)])  # fmt: skip
    bob, lou = Identity("bob"), Identity("lou")
    busy = [flow.admit(digest(bob, "get", "Pod", "default")) for _ in range(19)]
    lender = [flow.admit(digest(lou, "get", "Pod", "default")) for _ in range(23)]
    running = [g for g in busy if not isinstance(g, Pending)]
    held = [g for g in busy if isinstance(g, Pending)]
    assert (len(running), len(held), flow.inflight("lender")) == (17, 2, 3)
    clock.now = 10.0
    flow.adjust()
    limits = flow.level_limits()
    assert (limits["busy"].current, limits["lender"].current) == (10, 10)
    assert flow.inflight("lender") == 10  # seven of lender's waiters got seats
    for seat in running[:7]:  # 17 -> 10 running: nothing passed on
        flow.release(seat)
        assert not any(p._granted.is_set() for p in held)
    assert flow.inflight("busy") == 10
    flow.release(running[7])  # at the limit now: the seat passes on
    assert sum(p._granted.is_set() for p in held) == 1 and flow.inflight("busy") == 10
    for seat in running[8:]:
        flow.release(seat)
    for pending in held:
        flow.release(pending.seat)
    for got in lender:
        if isinstance(got, Pending) and not got._granted.is_set():
            got.seat.released = True  # as a request that gave up
        else:
            flow.release(got.seat if isinstance(got, Pending) else got)
