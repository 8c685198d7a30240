"""machinery.onecpu's readings and its choice of CPU (the pinning itself, on
real threads and child processes: tests/integration/test_onecpu.py)."""

from __future__ import annotations

from machinery.onecpu import busy_between, choose, cpu_ticks

STAT = """cpu  500 0 300 9000 100 0 20 0 0 0
cpu0 400 0 200 4000 50 0 10 0 0 0
cpu1 100 0 100 5000 50 0 10 0 0 0
intr 123456 0 0
ctxt 987654
"""


def test_cpu_ticks_reads_each_cpu_and_counts_idle_and_iowait_as_not_busy() -> None:
    assert cpu_ticks(STAT) == {0: (610, 4660), 1: (210, 5260)}


def test_cpu_ticks_skips_the_summary_line_and_short_lines() -> None:
    assert cpu_ticks("cpu  1 2 3 4 5 6 7 8\ncpu3 1 2\n") == {}


def test_busy_between_is_each_cpus_busy_share_and_leaves_out_a_cpu_gone_offline() -> None:
    before = {0: (100, 1000), 1: (100, 1000), 2: (0, 0)}
    after = {0: (175, 1100), 1: (110, 1100), 3: (50, 60)}
    assert busy_between(before, after) == {0: 0.75, 1: 0.1}


def test_a_cpu_without_ticks_between_readings_is_idle() -> None:
    assert busy_between({0: (5, 10)}, {0: (5, 10)}) == {0: 0.0}


def test_stays_while_no_cpu_carries_margin_less_of_other_work() -> None:
    # Ours is 0.9 of CPU 0; other processes use 0.2 of it and 0.5 of CPU 1.
    assert choose(0, {0, 1}, {0: 1.0, 1: 0.5}, ours=0.8, margin=0.5) == 0


def test_moves_to_the_cpu_with_the_least_other_work() -> None:
    # A busy process came to CPU 0: others use 0.9 of it, 0.1 of CPU 2.
    assert choose(0, {0, 1, 2}, {0: 1.0, 1: 0.6, 2: 0.1}, ours=0.1, margin=0.5) == 2


def test_its_own_use_of_its_cpu_is_not_counted_against_it() -> None:
    # CPU 0 is fully busy, all of it this process: nothing to gain elsewhere.
    assert choose(0, {0, 1}, {0: 1.0, 1: 0.3}, ours=1.0, margin=0.5) == 0


def test_only_allowed_cpus_are_chosen() -> None:
    assert choose(0, {0, 1}, {0: 1.0, 1: 0.9, 2: 0.0}, ours=0.0, margin=0.5) == 0


def test_a_current_cpu_gone_from_the_readings_is_left() -> None:
    assert choose(3, {1, 2, 3}, {1: 0.7, 2: 0.2}, ours=0.5, margin=0.5) == 2


def test_no_readings_keep_the_current_cpu() -> None:
    assert choose(1, {0, 1}, {}, ours=0.0, margin=0.5) == 1
