"""Borrowing between priority levels: how API priority and fairness moves
seats from levels that do not use them to levels that need them
(Kubernetes' KEP-1040 borrowing, k8s.io/apiserver's apf_controller).

A Limited level has three limits, fixed by its configuration:

- nominal: its share of the server's seats (apf_match.levels_of);
- lower: nominal less what it may lend, round(nominal * lendablePercent / 100);
- upper: nominal plus what it may borrow, round(nominal *
  borrowingLimitPercent / 100), or the whole server when the field is unset.

Its current limit, what `FlowControl` enforces, moves between lower and
upper. Every adjustment period (10 s) each level's seat demand (seats
executing plus seats queued) over the period is summarised: its
time-weighted average, standard deviation and high watermark. The smoothed
demand rises at once to average + deviation and decays towards it slowly
(coefficient 0.977 a period: a 5-minute half-life). Then the nominal limits'
sum is divided anew: each level gets `fair * target`, clamped to its
bounds, with one `fair` for all, chosen so the limits add up to the sum.
A level's target is its smoothed demand, its floor the larger of its lower
limit and the smaller of nominal and the period's high watermark (a level
that just used its seats keeps them). Limits are rounded to whole seats.

Exempt levels are never held back and take no part in the division.

Pure functions and small records; flowcontrol.py keeps the state and the lock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

PERIOD = 10.0  # seconds between adjustments (borrowingAdjustmentPeriod)
SMOOTHING = 0.977  # seatDemandSmoothingCoefficient: a 5-minute half-life at 10 s
MIN_TARGET = 0.001  # a target below this counts as this (no division by zero)


def round_half_away(x: float) -> int:
    """Go's math.Round: halves away from zero (Python's round() goes to even)."""
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


@dataclass(frozen=True)
class Bounds:
    """A Limited level's fixed limits, in seats."""

    nominal: int
    lower: int
    upper: int

    @staticmethod
    def of(nominal: int, lendable_percent: int, borrowing_percent: int | None,
           server_limit: int) -> Bounds:  # fmt: skip
        lendable = round_half_away(nominal * lendable_percent / 100)
        if borrowing_percent is None:
            borrowing = server_limit
        else:
            borrowing = round_half_away(nominal * borrowing_percent / 100)
        return Bounds(nominal, nominal - lendable, nominal + borrowing)


@dataclass(frozen=True)
class Item:
    """One level in a division: what it would like and what it must stay in."""

    target: float
    lower: float
    upper: float


def allocate(total: float, items: Sequence[Item]) -> tuple[list[float], float]:
    """Divide `total` among `items`: each gets `fair * target` clamped to
    [lower, upper], with the one `fair` that makes the shares add up to
    `total`. Returns the shares and `fair`. Raises ValueError when the
    bounds make it impossible (lowers above the total, uppers below it) or
    an item is malformed."""
    if total < 0:
        raise ValueError("the total to divide is negative")
    targets: list[float] = []
    for i, item in enumerate(items):
        if item.lower < 0 or item.upper < item.lower or item.target < item.lower:
            raise ValueError(f"item {i} needs 0 <= lower <= target and lower <= upper: {item}")
        targets.append(max(item.target, MIN_TARGET))
    low = sum(i.lower for i in items)
    high = sum(i.upper for i in items)
    eps = 1e-7
    if low - total > eps:
        raise ValueError(f"the lower bounds add up to {low}, more than {total}")
    if total - high > eps:
        raise ValueError(f"the upper bounds add up to {high}, less than {total}")
    if total == 0:
        return [0.0] * len(items), 0.0
    if low - total > -eps:
        return [i.lower for i in items], min(
            i.lower / t for i, t in zip(items, targets, strict=True)
        )
    if total - high > -eps:
        return [i.upper for i in items], max(
            i.upper / t for i, t in zip(items, targets, strict=True)
        )

    def shares(fair: float) -> list[float]:
        return [min(i.upper, max(i.lower, fair * t)) for i, t in zip(items, targets, strict=True)]

    # sum(shares(fair)) is continuous, non-decreasing and linear between the
    # points where some item reaches a bound: find the piece holding `total`.
    points = sorted(
        {b / t for i, t in zip(items, targets, strict=True) for b in (i.lower, i.upper)}
    )
    below = points[0]
    for point in points[1:]:
        if sum(shares(point)) >= total:
            break
        below = point
    # On (below, point] the free items are those strictly inside their bounds.
    at_below = sum(shares(below))
    slope = sum(
        t for i, t in zip(items, targets, strict=True) if i.lower / t <= below < i.upper / t
    )
    fair = below if slope == 0 else below + (total - at_below) / slope
    return shares(fair), fair


class SeatDemand:
    """The time-weighted average, deviation and maximum of a level's seat
    demand since the last reset (the queueset's seat-demand integrator)."""

    def __init__(self, now: float) -> None:
        self._start = self._since = now
        self._value = 0.0
        self._sum = self._squares = 0.0
        self._max = 0.0

    def set(self, now: float, value: float) -> None:
        self._advance(now)
        self._value = value
        self._max = max(self._max, value)

    def _advance(self, now: float) -> None:
        dt = max(now - self._since, 0.0)
        self._sum += self._value * dt
        self._squares += self._value * self._value * dt
        self._since = now

    def reset(self, now: float) -> tuple[float, float, float, float]:
        """(duration, average, deviation, maximum) of the period now ended;
        the next period starts at the current value."""
        self._advance(now)
        duration = now - self._start
        if duration > 0:
            avg = self._sum / duration
            dev = math.sqrt(max(self._squares / duration - avg * avg, 0.0))
        else:
            avg = dev = 0.0
        out = (duration, avg, dev, self._max)
        self._start = now
        self._sum = self._squares = 0.0
        self._max = self._value
        return out


@dataclass
class DemandStats:
    """A level's demand as the division reads it."""

    high_watermark: float = 0.0
    smoothed: float = 0.0

    def update(self, duration: float, avg: float, dev: float, maximum: float) -> None:
        self.high_watermark = maximum
        if duration <= 0:
            return
        envelope = avg + dev
        self.smoothed = max(envelope, SMOOTHING * self.smoothed + (1 - SMOOTHING) * envelope)

    def item(self, bounds: Bounds) -> Item:
        floor = max(bounds.lower, min(bounds.nominal, self.high_watermark))
        return Item(target=max(floor, self.smoothed), lower=floor, upper=bounds.upper)
