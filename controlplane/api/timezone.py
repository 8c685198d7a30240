"""CronJob spec.timeZone, validated as Kubernetes validates it: a name of
the tz database (here the host's, through zoneinfo, as Go's
time.LoadLocation reads the system's), each part at most 14 characters of
[A-Za-z.-_0-9+], never "." or "..", never starting with "-", and not
"Local". Messages are Kubernetes' own.
"""

from __future__ import annotations

import re
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")
IANA = "https://www.iana.org/time-zones"


def time_zone_problem(value: Any) -> str | None:
    """Why `value` is no valid spec.timeZone (None: it is, or it is unset)."""
    if value is None:
        return None
    if not isinstance(value, str):
        return "must be a string"
    if value == "":
        return 'Invalid value: "": timeZone must be nil or non-empty string'
    unknown = f'Invalid value: "{value}": unknown time zone {value}'
    for part in value.split("/"):
        if part in (".", "..") or part.startswith("-") or not _PART.match(part):
            return unknown
    if value.lower() == "local":
        return (
            f'Invalid value: "{value}": timeZone must be an explicit time zone as defined in {IANA}'
        )
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return unknown
    return None


def schedule_has_tz(schedule: Any) -> bool:
    return isinstance(schedule, str) and "TZ" in schedule
