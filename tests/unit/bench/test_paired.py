"""bench.paired: both modes each round, the order alternating, and when the
sign test shows one cheaper."""

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


def test_cheaper_when_the_signed_rank_test_says_so_whatever_one_round_did() -> None:
    assert Summary([2.0] * 5, [1.9] * 5).b_cheaper()  # 5 of 5: p 1/32
    assert not Summary([2.0] * 4, [1.9] * 4).b_cheaper()  # 4 of 4: p 1/16, too few rounds
    # 15 of 16 cheaper, one round far off: the spread (0.65) would have hidden it.
    assert Summary([2.0] * 16, [1.9] * 15 + [3.2]).b_cheaper()
    assert not Summary([2.0] * 8, [2.2] * 8).b_cheaper()  # dearer
    # A bench.kubeapi run: 11 of 16 rounds cheaper, the dearer ones by little.
    ratios = [1.009, 0.954, 0.976, 1.011, 0.957, 0.941, 1.001, 0.931,
              0.972, 0.965, 0.963, 1.000, 0.954, 0.952, 1.020, 0.929]  # fmt: skip
    run = Summary([1.0] * 16, ratios)
    assert run.b_cheaper_rounds == 11 and abs(run.sign_p - 0.105) < 0.001
    assert abs(run.signed_rank_p - 0.0013) < 0.0001 and run.b_cheaper()  # the 1.000 left out
    # As many cheaper rounds, but the dearer ones the far ones: no difference shown.
    mixed = Summary([1.0] * 16, [0.99] * 11 + [1.05, 1.06, 1.07, 1.08, 1.09])
    assert mixed.b_cheaper_rounds == 11 and not mixed.b_cheaper()


def test_signed_rank_p_by_hand_and_with_ties() -> None:
    # |log| ranks: 1.1 -> 1, 0.9 -> 2, 0.8 -> 3; b cheaper in ranks 2 and 3: sum 5,
    # reached or passed by 2 of the 8 sign patterns (sums 5 and 6).
    assert Summary([1.0] * 3, [0.9, 1.1, 0.8]).signed_rank_p == 2 / 8
    # Two rounds tied (mean rank 1.5 each), one cheaper: sums 0, 1.5, 1.5, 3 -> p 3/4.
    assert Summary([1.0] * 2, [0.5, 2.0]).signed_rank_p == 3 / 4


def test_sign_test_counts_the_rounds_b_was_cheaper_in() -> None:
    every = Summary([2.0] * 8, [1.9] * 8)
    assert every.b_cheaper_rounds == 8 and every.sign_p == 1 / 256
    seven = Summary([2.0] * 8, [1.9] * 7 + [2.1])
    assert seven.b_cheaper_rounds == 7 and seven.sign_p == 9 / 256
    assert Summary([2.0] * 4, [2.1] * 4).sign_p == 1.0  # never cheaper: certain by chance
