"""Small statistics the benchmarks share."""

from __future__ import annotations


def pctl(values: list[float], q: float) -> float:
    """The `q` quantile (0..1) of `values` by nearest rank; NaN when empty."""
    s = sorted(values)
    if not s:
        return float("nan")
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]
