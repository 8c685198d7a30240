"""A bootstrap token's expiration (RFC 3339, as kubeadm writes it): passed,
not yet, in any offset; an unreadable one counts as passed."""

from __future__ import annotations

import datetime

import pytest

from controlplane.api.bootstraptoken import expired

NOW = datetime.datetime(2026, 12, 2, 12, 0, 0, tzinfo=datetime.UTC)


@pytest.mark.parametrize(
    ("expiration", "passed"),
    [
        ("", False),  # no expiration: never
        ("2026-12-02T11:59:59Z", True),
        ("2026-12-02T12:00:00Z", True),
        ("2026-12-02T12:00:01Z", False),
        ("2026-12-02T13:30:00+01:00", False),
        ("2026-12-02T12:59:59+01:00", True),
        ("2026-12-02T12:00:01", False),  # no zone: UTC (it raised TypeError before)
        ("next tuesday", True),
    ],
)
def test_expired(expiration: str, passed: bool) -> None:
    assert expired(expiration, NOW) is passed
