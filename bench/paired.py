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
median and spread are reported. b is shown cheaper by Wilcoxon's
signed-rank test on the rounds' log ratios: the rounds ranked by how far
their ratio is from 1, b's cheaper rounds' ranks summed, and the chance
that a sum that high comes about were neither mode cheaper (each round's
sign a coin toss; exact, one-sided) below SIGNIFICANCE, the median ratio
below 1 with it. Beside it, the sign test (how many rounds b was cheaper
in, their size unused: 11 of 16 rounds at a median of 0.964 is p 0.105
there, 0.0013 by the ranks). The spread (max - min) of the ratios is no
yardstick: it widens with every round added and one disturbed round sets
it, so more evidence made a difference harder to show.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

SIGNIFICANCE = 0.05


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

    @property
    def signed_rank_p(self) -> float:
        """Wilcoxon's signed-rank test, one-sided: the chance, were each round's
        sign a coin toss, that b's cheaper rounds' ranks (by |log ratio|, ties
        sharing their mean rank; rounds of ratio 1 left out) sum as high."""
        logs = [math.log(r) for r in self.ratios if r > 0 and r != 1.0]
        order = sorted(range(len(logs)), key=lambda i: abs(logs[i]))
        doubled = [0] * len(logs)  # ranks times 2: a tie's mean rank stays whole
        start = 0
        while start < len(order):
            end = start
            while end + 1 < len(order) and abs(logs[order[end + 1]]) == abs(logs[order[start]]):
                end += 1
            for k in range(start, end + 1):
                doubled[order[k]] = start + end + 2
            start = end + 1
        observed = sum(rank for rank, value in zip(doubled, logs, strict=True) if value < 0)
        ways = {0: 1}  # rank sum -> how many of the sign patterns give it
        for rank in doubled:
            grown = dict(ways)
            for total, count in ways.items():
                grown[total + rank] = grown.get(total + rank, 0) + count
            ways = grown
        return sum(c for total, c in ways.items() if total >= observed) / (1 << len(logs))

    def b_cheaper(self) -> bool:
        """Whether b costs less than a: the signed-rank test below SIGNIFICANCE."""
        return self.ratio < 1.0 and self.signed_rank_p < SIGNIFICANCE


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
