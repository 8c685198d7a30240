"""RFC 3339 timestamps as Kubernetes writes them: the one home for formatting
and parsing them.

metav1.Time has second precision (`2026-11-26T00:35:38Z`), metav1.MicroTime
microseconds (Leases, events.k8s.io Events), and container log lines
nanoseconds (RFC3339Nano). Everything is UTC. Pure functions, no imports of
the rest of skiff, so every part (agent, controllers, CLI) may use them.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any

_NANO = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)")


def format_time(when: float) -> str:
    """Epoch seconds as a metav1.Time string (second precision, UTC)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))


def format_micro_time(when: float) -> str:
    """Epoch seconds as a metav1.MicroTime string (microseconds, UTC)."""
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def format_nano(ns: int) -> str:
    """Nanoseconds since the epoch as RFC3339Nano with all nine digits."""
    secs, frac = divmod(ns, 1_000_000_000)
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(secs))}.{frac:09d}Z"


def now(micro: bool = False) -> str:
    """The current time as metav1.Time (or MicroTime)."""
    return format_micro_time(time.time()) if micro else format_time(time.time())


def parse_time(value: Any) -> float | None:
    """An RFC 3339 timestamp as epoch seconds; None when absent or not one.

    Accepts `Z` or a numeric offset and any fraction; a timestamp without a
    zone is taken as UTC."""
    if not value or not isinstance(value, str):
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def parse_nano(text: str) -> int:
    """RFC 3339 with up to nine fraction digits -> nanoseconds since the epoch.

    Exact (no float rounding); raises ValueError naming the text otherwise."""
    m = _NANO.fullmatch(text)
    if not m:
        raise ValueError(f"bad timestamp {text!r}")
    base, frac, zone = m.groups()
    dt = datetime.fromisoformat(base + ("+00:00" if zone == "Z" else zone))
    return int(dt.timestamp()) * 1_000_000_000 + int((frac or "0").ljust(9, "0"))
