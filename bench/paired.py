"""Two modes measured in paired rounds in one server, so a small difference
between them can show above the noise of a shared machine.

Each round runs both modes back to back, the order alternating from round
to round (a, b, then b, a, ...), so drift of the machine and of the store
as it grows falls on both alike. With `blocks` of 2 (or more) a round
runs each mode in that many blocks, the order mirrored within the round
(a, b, b, a, then b, a, a, b, ...): a drift that is steady over a round
then falls on both modes of that round alike, not on whichever went
second. A round gives each mode's cost (the server's CPU per operation,
say: the mean of its blocks) and the paired ratio b/a of that round;
over the rounds each mode's median and spread (max - min) and the ratio's
median and spread are reported. A difference is shown when the median
ratio is away from 1 by more than the ratio's spread. Beside it, the sign
test: how likely b would come out cheaper in at least as many rounds if
neither mode were (each round a coin toss).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    """Per-round costs of modes a and b, and what they say."""

    a: list[float]
    b: list[float]

    @property
    def ratios(self) -> list[float]:
        return [y / x for x, y in zip(self.a, self.b, strict=True) if x > 0]

    @staticmethod
    def median(values: list[float]) -> float:
        return statistics.median(values) if values else float("nan")

    @staticmethod
    def spread(values: list[float]) -> float:
        return max(values) - min(values) if values else float("nan")

    @property
    def ratio(self) -> float:
        """The median paired ratio b/a."""
        return self.median(self.ratios)

    @property
    def ratio_spread(self) -> float:
        return self.spread(self.ratios)

    @property
    def b_cheaper_rounds(self) -> int:
        return sum(r < 1 for r in self.ratios)

    @property
    def sign_p(self) -> float:
        """The one-sided sign test's p: the chance of b cheaper in at least
        b_cheaper_rounds of the rounds when each round is a coin toss."""
        n, k = len(self.ratios), self.b_cheaper_rounds
        return float(sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n)

    def b_cheaper(self) -> bool:
        """Whether b costs less than a by more than the paired ratio's spread."""
        return 1.0 - self.ratio > self.ratio_spread


def rounds(run: Callable[[str], float], a: str, b: str, count: int, blocks: int = 1) -> Summary:
    """`run(mode)` (a cost) for a and b in `count` paired rounds, the order
    alternating (a, b, then b, a, ...); each mode `blocks` times a round,
    mirrored (a, b, b, a), its cost in the round the mean of its blocks."""
    costs: dict[str, list[float]] = {a: [], b: []}
    for index in range(count):
        block: dict[str, list[float]] = {a: [], b: []}
        for j in range(blocks):
            for mode in (a, b) if (index + j) % 2 == 0 else (b, a):
                block[mode].append(run(mode))
        for mode, values in block.items():
            costs[mode].append(statistics.fmean(values))
    return Summary(costs[a], costs[b])
