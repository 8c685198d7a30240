"""API errors as gRPC statuses: the gRPC face of the one error table
(machinery.apierrors). A failed call ends with the table's status code and
the error's message, and carries its Kubernetes reason and retry advice in
trailing metadata (apierrors.REASON_KEY, RETRY_AFTER_KEY); an item of a
batch answer (BindResult, CreateResult) carries the same four fields.
Nothing else in the server picks a status code.
"""

from __future__ import annotations

from typing import Any, NoReturn

import grpc

from machinery import apierrors
from machinery.apierrors import ApiError

_CODES: dict[str, grpc.StatusCode] = {c.name: c for c in grpc.StatusCode}
_NAMES: dict[int, str] = {c.value[0]: c.name for c in grpc.StatusCode}


def status_code(err: ApiError) -> grpc.StatusCode:
    return _CODES[apierrors.grpc_code_name(err)]


def trailers(err: ApiError) -> tuple[tuple[str, str], ...]:
    """The trailing metadata of a call that failed with `err`."""
    reason = ((apierrors.REASON_KEY, apierrors.row_of(err).reason),)
    if err.retry_after:
        return (*reason, (apierrors.RETRY_AFTER_KEY, str(err.retry_after)))
    return reason


def abort(context: grpc.ServicerContext, err: ApiError) -> NoReturn:
    """End the call with `err`'s status, reason and retry advice."""
    context.set_trailing_metadata(trailers(err))
    context.abort(status_code(err), str(err))


def item_failure(err: ApiError) -> dict[str, Any]:
    """A batch item's status: code, message, reason and retry advice."""
    return {
        "code": status_code(err).value[0],
        "message": str(err),
        "reason": apierrors.row_of(err).reason,
        "retry_after_seconds": err.retry_after,
    }


def item_http_status(result: Any) -> int:
    """The HTTP status a failed batch item amounts to (for the audit log)."""
    error = apierrors.from_grpc(_NAMES.get(result.code, "UNKNOWN"), "", result.reason)
    return apierrors.http_status(error)
