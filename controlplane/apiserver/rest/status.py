"""API errors as metav1.Status: the one table of HTTP codes and reasons.

Handlers raise controlplane.client.errors (the registry's) or the HTTP-only
errors below; `error_response` is the only place that picks a status code.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from controlplane.api import jsoncodec
from controlplane.client import errors

CODES: dict[type[errors.ApiError], tuple[int, str]] = {
    errors.NotFound: (404, "NotFound"),
    errors.AlreadyExists: (409, "AlreadyExists"),
    errors.Conflict: (409, "Conflict"),
    errors.Invalid: (422, "Invalid"),
    errors.Gone: (410, "Expired"),
    errors.Unauthenticated: (401, "Unauthorized"),
    errors.Forbidden: (403, "Forbidden"),
    errors.Unavailable: (503, "ServiceUnavailable"),
    errors.TooManyRequests: (429, "TooManyRequests"),
}


class HttpError(errors.ApiError):
    """An error only HTTP has (bad body, wrong method ...): its own code and reason."""

    code = 500
    reason = "InternalError"
    retry_after = 0


class BadRequest(HttpError):
    code, reason = 400, "BadRequest"


class MethodNotAllowed(HttpError):
    code, reason = 405, "MethodNotAllowed"


class NotAcceptable(HttpError):
    code, reason = 406, "NotAcceptable"


class TooLarge(HttpError):
    code, reason = 413, "RequestEntityTooLarge"


class UnsupportedMediaType(HttpError):
    code, reason = 415, "UnsupportedMediaType"


def retry_after(err: errors.ApiError) -> int:
    """Seconds a client should wait before retrying (0: no advice)."""
    if isinstance(err, HttpError):
        return err.retry_after
    return 1 if isinstance(err, errors.TooManyRequests) else 0


def code_and_reason(err: errors.ApiError) -> tuple[int, str]:
    if isinstance(err, HttpError):
        return err.code, err.reason
    for cls in type(err).__mro__:
        found = CODES.get(cls)
        if found is not None:
            return found
    return 500, "InternalError"


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
