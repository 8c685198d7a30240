"""The one API error table: every reason maps to one kind, HTTP status and
gRPC code, and back; a status without a reason means what Kubernetes
clients take it to mean."""

from __future__ import annotations

import grpc
import pytest

from machinery import apierrors
from machinery.apierrors import TABLE, ApiError


@pytest.mark.parametrize("row", TABLE, ids=lambda r: r.reason)
def test_every_reason_maps_back_from_both_wires(row: apierrors.Row) -> None:
    sent = row.kind("no", reason=row.reason)
    assert apierrors.row_of(sent) == row
    assert grpc.StatusCode[row.grpc]  # a real code name
    for got in (
        apierrors.from_http(row.http, row.reason, "no"),
        apierrors.from_grpc(row.grpc, "no", row.reason),
    ):
        assert type(got) is row.kind and got.reason == row.reason and str(got) == "no"


def test_every_kind_has_its_default_reason_in_the_table() -> None:
    kinds = {row.kind for row in TABLE}
    for kind in kinds:
        row = apierrors.BY_REASON[kind.default_reason]
        assert row.kind is kind
    assert apierrors.row_of(ApiError("x")).reason == "InternalError"


def test_statuses_without_a_reason() -> None:
    """What an older server or a proxy's own answer stands for. The REST
    client once read 422, 410 and 500 as Unavailable."""
    by_http = {
        400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
        409: "Conflict", 410: "Gone", 413: "RequestEntityTooLarge", 418: "BadRequest",
        422: "Invalid", 429: "TooManyRequests", 500: "InternalError", 502: "InternalError",
        503: "ServiceUnavailable", 504: "Timeout",
    }  # fmt: skip
    for status, reason in by_http.items():
        assert apierrors.from_http(status, "", "m").reason == reason, status
    assert apierrors.from_http(409, "AlreadyExists", "m").reason == "AlreadyExists"
    assert apierrors.from_http(404, "Conflict", "m").reason == "NotFound"  # the status wins
    assert isinstance(apierrors.from_grpc("FAILED_PRECONDITION", "m"), apierrors.Conflict)
    late = apierrors.from_grpc("DEADLINE_EXCEEDED", "m")
    assert isinstance(late, apierrors.Unavailable) and late.reason == "Timeout"
    odd = apierrors.from_grpc("UNKNOWN", "boom")
    assert type(odd) is apierrors.InternalError and str(odd) == "UNKNOWN: boom"


def test_retry_advice() -> None:
    assert apierrors.TooManyRequests("x").retry_after == 1
    assert apierrors.Conflict("x").retry_after == 0
    assert apierrors.retryable(apierrors.Conflict("x"))
    assert not apierrors.retryable(apierrors.Invalid("x"))
    assert apierrors.retryable(apierrors.Invalid("x", retry_after=2))
    assert apierrors.from_http(409, "Conflict", "m", 3).retry_after == 3
