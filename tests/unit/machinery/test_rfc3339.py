"""The one home of RFC 3339 timestamps: what Kubernetes writes, and what
other writers send."""

from __future__ import annotations

import pytest

from machinery import rfc3339


def test_formats() -> None:
    assert rfc3339.format_time(0) == "1970-01-01T00:00:00Z"
    assert rfc3339.format_time(1_700_000_000.9) == "2023-11-14T22:13:20Z"
    assert rfc3339.format_micro_time(1.5) == "1970-01-01T00:00:01.500000Z"
    assert rfc3339.format_nano(1_000_000_007) == "1970-01-01T00:00:01.000000007Z"
    assert rfc3339.format_nano_trimmed(1_500_000_000) == "1970-01-01T00:00:01.5Z"
    assert rfc3339.format_micro_exact(1, 500) == "1970-01-01T00:00:01.000500Z"


def test_datetimes_are_written_in_utc() -> None:
    import datetime

    plus2 = datetime.timezone(datetime.timedelta(hours=2))
    moment = datetime.datetime(2026, 1, 2, 5, 4, 5, 123456, tzinfo=plus2)
    assert rfc3339.format_datetime(moment) == "2026-01-02T03:04:05Z"
    assert rfc3339.format_micro_datetime(moment) == "2026-01-02T03:04:05.123456Z"
    naive = datetime.datetime(2026, 1, 2, 3, 4, 5)
    assert rfc3339.format_datetime(naive) == "2026-01-02T03:04:05Z"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1970-01-01T00:00:01Z", 1.0),
        ("1970-01-01T00:00:01.250000Z", 1.25),
        ("1970-01-01T01:00:01+01:00", 1.0),
        ("1970-01-01T00:00:01", 1.0),  # no zone: UTC
        ("", None),
        (None, None),
        (12, None),
        ("yesterday", None),
    ],
)
def test_parse_time(text: object, seconds: float | None) -> None:
    assert rfc3339.parse_time(text) == seconds


def test_parse_nano_is_exact_and_strict() -> None:
    assert rfc3339.parse_nano("2026-01-01T00:00:00.000000001Z") % 1_000_000_000 == 1
    assert rfc3339.parse_nano("2026-01-01T01:00:00+01:00") == rfc3339.parse_nano(
        "2026-01-01T00:00:00Z"
    )
    ns = 1_764_117_338_123_456_789
    assert rfc3339.parse_nano(rfc3339.format_nano(ns)) == ns
    with pytest.raises(ValueError, match="bad timestamp"):
        rfc3339.parse_nano("2026-01-01 00:00:00Z")


def test_format_in_zone_carries_the_offset() -> None:
    """A CronJob's scheduled time in its spec.timeZone: the zone's offset,
    and `Z` for UTC itself."""
    import datetime
    from zoneinfo import ZoneInfo

    assert rfc3339.format_in_zone(0, datetime.UTC) == "1970-01-01T00:00:00Z"
    tokyo = ZoneInfo("Asia/Tokyo")
    assert rfc3339.format_in_zone(1_700_000_000, tokyo) == "2023-11-15T07:13:20+09:00"
    assert rfc3339.parse_time(rfc3339.format_in_zone(1_700_000_000, tokyo)) == 1_700_000_000
