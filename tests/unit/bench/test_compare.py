"""bench.compare: which way is better for each kind of figure."""

from __future__ import annotations

import pytest

from bench.compare import better_higher

RATES = ("sqlite_create_10c_quota_per_s", "rest_pb_create_10c_per_s", "sqlite_quota_ratio",
         "etcd_metrics_ratio")  # fmt: skip
OTHERS = ("sqlite_create_quota_server_cpu_ms", "sqlite_quota_spread_pct", "add_p50_ratio",
          "cold_ratio_skiff_over_containerd", "up_total_rss_mb_rest")  # fmt: skip


@pytest.mark.parametrize("figure", RATES)
def test_rates_and_ratios_of_rates_are_better_higher(figure: str) -> None:
    assert better_higher(figure)


@pytest.mark.parametrize("figure", OTHERS)
def test_times_sizes_and_ratios_of_times_are_better_lower(figure: str) -> None:
    assert not better_higher(figure)
