"""RFC 3339 timestamps as Kubernetes writes them: the one home for formatting
and parsing them.

metav1.Time has second precision (`2026-11-26T00:35:38Z`), metav1.MicroTime
microseconds (Leases, events.k8s.io Events, audit stages), and container log
lines nanoseconds: `format_nano` prints all nine digits (Kubernetes'
RFC3339NanoFixed, what `kubectl logs --timestamps` shows), `format_nano_trimmed`
trims trailing zeros (Go's time.RFC3339Nano, what CRI log files carry).
Everything is UTC; a naive datetime is taken as UTC. Pure functions with
cheap imports (the container monitor formats its log lines here).
"""

from __future__ import annotations

import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime, tzinfo
    from typing import Any

_SECONDS = "%Y-%m-%dT%H:%M:%S"


def format_time(when: float) -> str:
    """Epoch seconds as a metav1.Time string (second precision, UTC)."""
    return time.strftime(_SECONDS + "Z", time.gmtime(when))


def format_micro_time(when: float) -> str:
    """Epoch seconds as a metav1.MicroTime string (microseconds, UTC)."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(when, UTC).strftime(_SECONDS + ".%fZ")


def format_micro_exact(seconds: int, micros: int) -> str:
    """Whole seconds since the epoch and microseconds as a metav1.MicroTime
    string, with no float rounding (a protobuf Timestamp's fields)."""
    return f"{time.strftime(_SECONDS, time.gmtime(seconds))}.{micros:06d}Z"


def _utc(moment: datetime) -> datetime:
    from datetime import UTC

    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def format_datetime(moment: datetime) -> str:
    """A datetime as a metav1.Time string (second precision, UTC)."""
    return _utc(moment).strftime(_SECONDS + "Z")


def format_micro_datetime(moment: datetime) -> str:
    """A datetime as a metav1.MicroTime string (microseconds, UTC)."""
    return _utc(moment).strftime(_SECONDS + ".%fZ")


def format_in_zone(when: float, zone: tzinfo) -> str:
    """Epoch seconds as RFC 3339 with second precision in `zone`, with its
    numeric offset (`2026-11-26T09:35:38+09:00`; `Z` for UTC), as Go's
    time.RFC3339 prints a time in a location (a CronJob's scheduled time)."""
    from datetime import UTC, datetime

    if zone is UTC:
        return format_time(when)
    return datetime.fromtimestamp(when, zone).isoformat(timespec="seconds")


def format_nano(ns: int) -> str:
    """Nanoseconds since the epoch as RFC3339Nano with all nine digits."""
    secs, frac = divmod(ns, 1_000_000_000)
    return f"{time.strftime(_SECONDS, time.gmtime(secs))}.{frac:09d}Z"


def format_nano_trimmed(ns: int | None = None) -> str:
    """Nanoseconds since the epoch (default: now) as Go's time.RFC3339Nano
    prints them: trailing zeros of the fraction trimmed, none when whole."""
    if ns is None:
        ns = time.time_ns()
    secs, frac = divmod(ns, 1_000_000_000)
    base = time.strftime(_SECONDS, time.gmtime(secs))
    if frac:
        base += "." + f"{frac:09d}".rstrip("0")
    return base + "Z"


def now(micro: bool = False) -> str:
    """The current time as metav1.Time (or MicroTime)."""
    return format_micro_time(time.time()) if micro else format_time(time.time())


def parse_time(value: Any) -> float | None:
    """An RFC 3339 timestamp as epoch seconds; None when absent or not one.

    Accepts `Z` or a numeric offset and any fraction; a timestamp without a
    zone is taken as UTC."""
    from datetime import UTC, datetime

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
    import re
    from datetime import datetime

    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)", text)
    if not m:
        raise ValueError(f"bad timestamp {text!r}")
    base, frac, zone = m.groups()
    dt = datetime.fromisoformat(base + ("+00:00" if zone == "Z" else zone))
    return int(dt.timestamp()) * 1_000_000_000 + int((frac or "0").ljust(9, "0"))
