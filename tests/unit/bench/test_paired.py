"""bench.paired: both modes each round, the order alternating, and when a
difference shows above the paired ratio's spread."""

from __future__ import annotations

from bench.paired import Summary, rounds


def test_rounds_alternate_the_order_and_pair_by_round() -> None:
    ran: list[str] = []
    costs = {"a": iter([2.0, 4.0, 2.0]), "b": iter([1.0, 3.0, 1.8])}

    def run(mode: str) -> float:
        ran.append(mode)
        return next(costs[mode])

    s = rounds(run, "a", "b", 3)
    assert ran == ["a", "b", "b", "a", "a", "b"]
    assert s.a == [2.0, 4.0, 2.0] and s.b == [1.0, 3.0, 1.8]
    assert s.ratios == [0.5, 0.75, 0.9]
    assert s.ratio == 0.75
    assert abs(s.ratio_spread - 0.4) < 1e-9
    assert s.median(s.a) == 2.0 and s.spread(s.a) == 2.0


def test_blocks_mirror_the_order_within_a_round_and_average() -> None:
    ran: list[str] = []
    costs = {"a": iter([2.0, 4.0, 3.0, 3.0]), "b": iter([1.0, 2.0, 2.0, 1.0])}

    def run(mode: str) -> float:
        ran.append(mode)
        return next(costs[mode])

    s = rounds(run, "a", "b", 2, blocks=2)
    assert ran == ["a", "b", "b", "a", "b", "a", "a", "b"]
    assert s.a == [3.0, 3.0] and s.b == [1.5, 1.5]
    assert s.ratios == [0.5, 0.5] and s.ratio_spread == 0.0


def test_cheaper_only_by_more_than_the_spread() -> None:
    assert Summary([2.0, 2.0, 2.0], [1.8, 1.82, 1.78]).b_cheaper()  # 0.9, spread 0.02
    assert not Summary([2.0, 2.0, 2.0], [1.8, 2.1, 1.9]).b_cheaper()  # 0.95, spread 0.15
    assert not Summary([2.0, 2.0], [2.2, 2.2]).b_cheaper()  # dearer


def test_sign_test_counts_the_rounds_b_was_cheaper_in() -> None:
    every = Summary([2.0] * 8, [1.9] * 8)
    assert every.b_cheaper_rounds == 8 and every.sign_p == 1 / 256
    seven = Summary([2.0] * 8, [1.9] * 7 + [2.1])
    assert seven.b_cheaper_rounds == 7 and seven.sign_p == 9 / 256
    assert Summary([2.0] * 4, [2.1] * 4).sign_p == 1.0  # never cheaper: certain by chance
