"""Small statistics the benchmarks share, and how they print their figures."""

from __future__ import annotations

import json
from collections.abc import Mapping


def pctl(values: list[float], q: float) -> float:
    """The `q` quantile (0..1) of `values` by nearest rank; NaN when empty."""
    s = sorted(values)
    if not s:
        return float("nan")
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def report(
    figures: Mapping[str, float],
    width: int = 40,
    column: int = 10,
    spec: str = "",
    header: str = "value",
    targets: Mapping[str, str] | None = None,
) -> None:
    """Print `figures` as a table (name `width` wide, value `column` wide in
    format `spec`, then the target where `targets` is given) and then as one
    JSON line, the last, which bench.compare reads."""
    tail = "  target" if targets is not None else ""
    print(f"{'figure':{width}} {header:>{column}}{tail}")
    for key, value in figures.items():
        line = f"{key:{width}} {value:>{column}{spec}}"
        print(line if targets is None else f"{line}  {targets.get(key, '')}")
    print(json.dumps(figures))
