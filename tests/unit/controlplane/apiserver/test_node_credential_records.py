"""A node credential's record: when it was issued travels with it, and a
client certificate signed before that (a deleted node's, once its name
joined again) no longer holds."""

from __future__ import annotations

from controlplane.apiserver.nodecredentials import (
    SIGNED_BEFORE_ISSUE,
    Record,
    record_of,
    secret_of,
    signed_since_issue,
)

ISSUED = 1_800_000_000.0
BACKDATE = 300.0  # csrsigning's notBefore: five minutes before signing


def test_the_issue_time_survives_the_secret() -> None:
    record = Record("abc", "uid-1", ISSUED)
    assert record_of(secret_of("n1", record)) == record
    assert record_of(secret_of("n1", Record("abc"))) == Record("abc")  # older records


def test_only_certificates_signed_since_the_issue_hold() -> None:
    record = Record("abc", issued=ISSUED)
    assert signed_since_issue(record, ISSUED - BACKDATE)  # signed at the issue
    assert signed_since_issue(record, ISSUED + 3600 - BACKDATE)  # renewed later
    # Signed two minutes before the name joined again: the deleted node's.
    assert not signed_since_issue(record, ISSUED - 120 - BACKDATE)
    assert not signed_since_issue(record, ISSUED - SIGNED_BEFORE_ISSUE - 1)
    assert signed_since_issue(Record("abc"), 0.0)  # a record of unknown age accepts any
