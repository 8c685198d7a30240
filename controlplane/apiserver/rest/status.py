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
    """Field causes of an Invalid: "path: problem" each (the registry's form)."""
    problems = getattr(err, "causes", None)
    if not problems:
        text = str(err)
        _, sep, rest = text.partition(" is invalid: ")
        problems = rest.split("; ") if sep else [text]
    causes = []
    for problem in problems:
        field, sep, message = str(problem).partition(": ")
        if not sep:
            field, message = "", field
        causes.append({"reason": "FieldValueInvalid", "message": message, "field": field})
    return causes


def status_object(
    err: errors.ApiError, kind: str = "", name: str = "", group: str = ""
) -> tuple[int, dict[str, Any]]:
    code, reason = code_and_reason(err)
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if kind:
        details["kind"] = kind
    if isinstance(err, errors.Invalid):
        details["causes"] = _causes(err)
    if retry_after(err):
        details["retryAfterSeconds"] = retry_after(err)
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": str(err),
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return code, body


def error_response(
    err: errors.ApiError, kind: str = "", name: str = "", group: str = ""
) -> web.Response:
    code, body = status_object(err, kind, name, group)
    headers = {}
    if retry_after(err):
        headers["Retry-After"] = str(retry_after(err))
    return web.Response(
        status=code, body=jsoncodec.dumps(body), content_type="application/json", headers=headers
    )


def success(kind: str = "", name: str = "", group: str = "", uid: str = "") -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if kind:
        details["kind"] = kind
    if uid:
        details["uid"] = uid
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }
