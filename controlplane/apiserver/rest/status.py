"""API errors as metav1.Status: the REST face of the one error table
(machinery.apierrors). `error_response` is the only place that picks a
status code; the code, reason and retry advice are the table's.

Handlers raise controlplane.client.errors (the registry's) or the errors
only HTTP has (BadRequest, MethodNotAllowed, NotAcceptable,
RequestEntityTooLarge, UnsupportedMediaType), all of the same table.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from controlplane.api import jsoncodec
from controlplane.api.checks import cause_reason
from controlplane.client import errors
from machinery.apierrors import (
    BadRequest,
    InternalError,
    MethodNotAllowed,
    NotAcceptable,
    RequestEntityTooLarge,
    UnsupportedMediaType,
    row_of,
)

__all__ = [
    "BadRequest",
    "InternalError",
    "MethodNotAllowed",
    "NotAcceptable",
    "RequestEntityTooLarge",
    "UnsupportedMediaType",
    "code_and_reason",
    "error_response",
    "retry_after",
    "status_object",
    "success",
]


def retry_after(err: errors.ApiError) -> int:
    """Seconds a client should wait before retrying (0: no advice)."""
    return err.retry_after


def code_and_reason(err: errors.ApiError) -> tuple[int, str]:
    row = row_of(err)
    return row.http, row.reason


def _causes(err: errors.ApiError) -> list[dict[str, str]]:
    """Field causes of an Invalid: "path: problem" each (the registry's form),
    the reason read from the problem's Kubernetes error type."""
    problems = getattr(err, "causes", None)
    if problems is None:  # [] set: an Invalid with no causes (a generic 422)
        text = str(err)
        _, sep, rest = text.partition(" is invalid: ")
        problems = rest.split("; ") if sep else [text]
    causes = []
    for problem in problems:
        field, sep, message = str(problem).partition(": ")
        if not sep:
            field, message = "", field
        causes.append({"reason": cause_reason(message), "message": message, "field": field})
    return causes


def status_object(
    err: errors.ApiError, kind: str = "", name: str = "", group: str = ""
) -> tuple[int, dict[str, Any]]:
    code, reason = code_and_reason(err)
    details = _details(
        err.details.get("kind", kind),
        err.details.get("name", name),
        err.details.get("group", group),
    )
    if isinstance(err, errors.Invalid) and (causes := _causes(err)):
        details["causes"] = causes
    elif getattr(err, "status_causes", None):  # typed causes (an eviction's DisruptionBudget)
        details["causes"] = list(err.status_causes)  # type: ignore[attr-defined]
    if retry_after(err):
        details["retryAfterSeconds"] = retry_after(err)
    # metav1.Status' field order, as Kubernetes writes it: details before code
    # (clients compare the bytes: the Python client's e2e tests do).
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": str(err),
        "reason": reason,
    }
    if details:
        body["details"] = details
    body["code"] = code
    return code, body


def error_response(
    err: errors.ApiError, kind: str = "", name: str = "", group: str = ""
) -> web.Response:
    code, body = status_object(err, kind, name, group)
    headers = {}
    if retry_after(err):
        headers["Retry-After"] = str(retry_after(err))
    return web.Response(
        status=code,
        body=jsoncodec.dumps(body) + b"\n",
        content_type="application/json",
        headers=headers,  # a newline ends it, as Go's json.Encoder writes it
    )


def success(kind: str = "", name: str = "", group: str = "", uid: str = "") -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": _details(kind, name, group, uid),
    }


def _details(kind: str, name: str, group: str, uid: str = "") -> dict[str, Any]:
    """metav1.StatusDetails: the fields given, in Kubernetes' order."""
    pairs = (("name", name), ("group", group), ("kind", kind), ("uid", uid))
    return {key: value for key, value in pairs if value}
