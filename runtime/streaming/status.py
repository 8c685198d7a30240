"""The Failure statuses the streaming server writes for runtime errors.

The metav1.Status bodies themselves are wire format (machinery/streaming/status.py,
re-exported here); this module only decides which runtime error becomes
which reason and code, as kubelet does. It must never write to a stream.
"""

from __future__ import annotations

from machinery.apierrors import BY_REASON
from machinery.streaming.status import (
    EXIT_CODE_CAUSE,
    NON_ZERO_EXIT_CODE,
    dump,
    exit_code,
    for_exit,
    legacy_exit_text,
    success,
)
from runtime import errors

__all__ = [
    "EXIT_CODE_CAUSE",
    "NON_ZERO_EXIT_CODE",
    "exit_code",
    "failure",
    "for_exit",
    "legacy_text",
    "success",
]

# Runtime error -> Kubernetes reason, as kubelet answers them; the HTTP
# code is the API error table's (machinery.apierrors).
_REASONS: list[tuple[type[BaseException], str]] = [
    (errors.NotFound, "NotFound"),
    (errors.InvalidArgument, "BadRequest"),
    (errors.FailedPrecondition, "BadRequest"),
    (errors.Unimplemented, "MethodNotAllowed"),
    (errors.DeadlineExceeded, "Timeout"),
]


def failure(exc: BaseException) -> bytes:
    """A Failure status for an error that kept the command from running."""
    message = str(exc) or type(exc).__name__
    for cls, reason in _REASONS:
        if isinstance(exc, cls):
            return dump(
                {
                    "metadata": {},
                    "status": "Failure",
                    "message": message,
                    "reason": reason,
                    "code": BY_REASON[reason].http,
                }
            )
    message = f"error executing command in container: {message}"
    return dump(
        {
            "metadata": {},
            "status": "Failure",
            "message": f"Internal error occurred: {message}",
            "reason": "InternalError",
            "details": {"causes": [{"message": message}]},
            "code": BY_REASON["InternalError"].http,
        }
    )


def legacy_text(code: int | None, exc: BaseException | None = None) -> bytes:
    """What protocol versions 2 and 3 write on the error stream (b"" on success)."""
    if exc is not None:
        return (str(exc) or type(exc).__name__).encode()
    return legacy_exit_text(code)
