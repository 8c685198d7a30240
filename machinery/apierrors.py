"""The API's errors and the one table they are mapped by.

Every failure of the Kubernetes API is an `ApiError` whose class is its kind
(NotFound, Conflict, Invalid, ...) and which carries its Kubernetes reason
(metav1.StatusReason: `err.reason`) and the seconds a client should wait
before retrying (`err.retry_after`, 0: no advice). `TABLE` gives each reason
its kind, HTTP status, gRPC status code and whether retrying the same
request may succeed. Everything that turns an error into a wire status or
back derives from it: the REST server's metav1.Status (code, reason,
details.retryAfterSeconds, Retry-After), the gRPC servicer's status code
(with the reason and retry advice in trailing metadata, `REASON_KEY` and
`RETRY_AFTER_KEY`, and in the batch results), the gRPC client and the REST
client (`from_grpc`, `from_http`). Callers test kinds and reasons, never
message text.

Standard library only; gRPC codes are named as grpc.StatusCode names, so
this module needs no gRPC.
"""

from __future__ import annotations

from dataclasses import dataclass


class ApiError(Exception):
    """Base of every API failure. The message (`str(err)`) is safe to show
    to a user; `reason` is the Kubernetes StatusReason, `retry_after` the
    seconds to wait before retrying (0: no advice)."""

    default_reason = "InternalError"
    default_retry_after = 0

    def __init__(
        self, message: str = "", *, reason: str = "", retry_after: int | None = None
    ) -> None:
        super().__init__(message)
        self.reason = reason or self.default_reason
        self.retry_after = self.default_retry_after if retry_after is None else retry_after


class NotFound(ApiError):
    """The object (or kind, or namespace) does not exist."""

    default_reason = "NotFound"


class AlreadyExists(ApiError):
    """An object with that name already exists."""

    default_reason = "AlreadyExists"


class Conflict(ApiError):
    """resourceVersion or a precondition did not match, or the object is in
    a state that refuses the request (a binding of a pod being deleted).
    `retry_after` set: the same request may pass if retried."""

    default_reason = "Conflict"


class Invalid(ApiError):
    """The object failed validation; the message names the field path,
    e.g. `spec.replicas: must be >= 0`."""

    default_reason = "Invalid"


class Gone(ApiError):
    """A watch or list continue token is older than the retained history:
    the client must relist (reason Expired; Gone when a server says so)."""

    default_reason = "Expired"


class Unauthenticated(ApiError):
    """No or bad credentials."""

    default_reason = "Unauthorized"


class Forbidden(ApiError):
    """The credential may not do this."""

    default_reason = "Forbidden"


class TooManyRequests(ApiError):
    """A limit on what one client may hold at once (watches, requests in
    flight) is reached: retry later."""

    default_reason = "TooManyRequests"
    default_retry_after = 1


class Unavailable(ApiError):
    """The API server (or what it needs: its store, an agent) could not be
    reached."""

    default_reason = "ServiceUnavailable"


class Timeout(Unavailable):
    """The request did not finish in time; it may still take effect."""

    default_reason = "Timeout"


class InternalError(ApiError):
    """The server failed for a reason of its own."""


class BadRequest(ApiError):
    """The request itself is malformed (body, parameters, upgrade)."""

    default_reason = "BadRequest"


class MethodNotAllowed(ApiError):
    default_reason = "MethodNotAllowed"


class NotAcceptable(ApiError):
    """None of the media types the client accepts can be served."""

    default_reason = "NotAcceptable"


class RequestEntityTooLarge(ApiError):
    default_reason = "RequestEntityTooLarge"


class UnsupportedMediaType(ApiError):
    default_reason = "UnsupportedMediaType"


@dataclass(frozen=True)
class Row:
    """One reason: its kind, HTTP status, gRPC code name, and whether the
    same request may succeed if retried."""

    reason: str
    kind: type[ApiError]
    http: int
    grpc: str
    retryable: bool


TABLE: tuple[Row, ...] = (
    Row("NotFound", NotFound, 404, "NOT_FOUND", False),
    Row("AlreadyExists", AlreadyExists, 409, "ALREADY_EXISTS", False),
    Row("Conflict", Conflict, 409, "ABORTED", True),
    Row("Invalid", Invalid, 422, "INVALID_ARGUMENT", False),
    Row("Expired", Gone, 410, "OUT_OF_RANGE", False),
    Row("Gone", Gone, 410, "OUT_OF_RANGE", False),
    Row("Unauthorized", Unauthenticated, 401, "UNAUTHENTICATED", False),
    Row("Forbidden", Forbidden, 403, "PERMISSION_DENIED", False),
    Row("TooManyRequests", TooManyRequests, 429, "RESOURCE_EXHAUSTED", True),
    Row("ServiceUnavailable", Unavailable, 503, "UNAVAILABLE", True),
    Row("Timeout", Timeout, 504, "DEADLINE_EXCEEDED", True),
    Row("InternalError", InternalError, 500, "INTERNAL", False),
    Row("BadRequest", BadRequest, 400, "INVALID_ARGUMENT", False),
    Row("MethodNotAllowed", MethodNotAllowed, 405, "UNIMPLEMENTED", False),
    Row("NotAcceptable", NotAcceptable, 406, "INVALID_ARGUMENT", False),
    Row("RequestEntityTooLarge", RequestEntityTooLarge, 413, "RESOURCE_EXHAUSTED", False),
    Row("UnsupportedMediaType", UnsupportedMediaType, 415, "INVALID_ARGUMENT", False),
)

BY_REASON: dict[str, Row] = {row.reason: row for row in TABLE}

# What a status without a reason (an older server, a proxy's own page, a
# batch item) stands for: the first row of its code, and a few codes of
# neither table.
_GRPC_DEFAULT: dict[str, Row] = {}
_HTTP_DEFAULT: dict[int, Row] = {}
for _row in TABLE:
    _GRPC_DEFAULT.setdefault(_row.grpc, _row)
    _HTTP_DEFAULT.setdefault(_row.http, _row)
_GRPC_DEFAULT["FAILED_PRECONDITION"] = BY_REASON["Conflict"]
_HTTP_DEFAULT[409] = BY_REASON["Conflict"]  # as client-go reads a 409 without a Status
_HTTP_DEFAULT[410] = BY_REASON["Gone"]

# gRPC trailing metadata keys of a failed call (and of nothing else).
REASON_KEY = "skiff-reason"
RETRY_AFTER_KEY = "skiff-retry-after"


def row_of(err: ApiError) -> Row:
    """The table's row for an error: its reason's, or its kind's first row
    when a subclass was given a reason the table does not know."""
    row = BY_REASON.get(err.reason)
    if row is not None and isinstance(err, row.kind):
        return row
    for cls in type(err).__mro__:
        for candidate in TABLE:
            if candidate.kind is cls:
                return candidate
    return BY_REASON["InternalError"]


def http_status(err: BaseException) -> int:
    """The HTTP status of an error (500 for one that is no ApiError)."""
    return row_of(err).http if isinstance(err, ApiError) else 500


def grpc_code_name(err: ApiError) -> str:
    """The grpc.StatusCode name of an error."""
    return row_of(err).grpc


def retryable(err: ApiError) -> bool:
    """Whether the same request may succeed if retried (the reason's rule,
    or a retry advice the error carries)."""
    return row_of(err).retryable or err.retry_after > 0


def _make(row: Row, message: str, reason: str, retry_after: int) -> ApiError:
    return row.kind(message, reason=reason or row.reason, retry_after=retry_after or None)


def from_http(status: int, reason: str, message: str, retry_after: int = 0) -> ApiError:
    """The error a REST answer stands for: by its Status reason when the
    table knows it for that status, else by the status alone (another 4xx:
    BadRequest, anything else: InternalError)."""
    row = BY_REASON.get(reason)
    if row is None or row.http != status:
        row = (
            _HTTP_DEFAULT.get(status)
            or BY_REASON["BadRequest" if 400 <= status < 500 else "InternalError"]
        )
        reason = ""
    return _make(row, message or f"HTTP {status}", reason, retry_after)


def from_grpc(code_name: str, message: str, reason: str = "", retry_after: int = 0) -> ApiError:
    """The error a gRPC status stands for: by the reason the server sent
    along when the table knows it for that code, else by the code alone
    (then a server error, INTERNAL, UNKNOWN or a code of no row, keeps its
    code name in front of the message: nothing else says what it was)."""
    row = BY_REASON.get(reason)
    if row is None or row.grpc != code_name:
        row = _GRPC_DEFAULT.get(code_name) or BY_REASON["InternalError"]
        reason = ""
        if row.kind is InternalError:
            message = f"{code_name}: {message}"
    return _make(row, message or code_name, reason, retry_after)
