"""metav1.Duration's JSON form: Go's time.Duration text ("1h2m3.5s"), to and
from the nanoseconds its protobuf message carries."""

from __future__ import annotations

import re

_UNITS = {"ns": 1, "us": 1000, "µs": 1000, "μs": 1000, "ms": 10**6, "s": 10**9,
          "m": 60 * 10**9, "h": 3600 * 10**9}  # fmt: skip
_DURATION = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")


def format_duration(nanos: int) -> str:
    """time.Duration.String(): "1h2m3.5s", "1.5ms", "0s"."""
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    n = abs(nanos)
    if n < 10**9:
        for unit, size in (("ms", 10**6), ("µs", 1000), ("ns", 1)):
            if n >= size:
                return sign + _frac(n, size) + unit
    hours, rest = divmod(n, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    text = _frac(rest, 10**9) + "s"
    if hours or minutes:
        text = f"{minutes}m" + text
    if hours:
        text = f"{hours}h" + text
    return sign + text


def _frac(n: int, size: int) -> str:
    whole, rest = divmod(n, size)
    if not rest:
        return str(whole)
    digits = str(rest).rjust(len(str(size)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def parse_duration(text: str) -> int | None:
    """time.ParseDuration: nanoseconds, None when `text` is not a duration."""
    body = text.strip()
    sign = -1 if body.startswith("-") else 1
    body = body.lstrip("+-")
    if body == "0":
        return 0
    total, pos = 0, 0
    for match in _DURATION.finditer(body):
        if match.start() != pos or match.group(1) in ("", "."):
            return None
        total += int(float(match.group(1)) * _UNITS[match.group(2)])
        pos = match.end()
    return sign * total if pos == len(body) and pos else None
