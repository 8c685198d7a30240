"""metav1.Status objects as the remote-command error channel carries them.

Version 4 of the remote-command protocol (and the WebSocket v4/v5 protocols)
write one JSON metav1.Status on the error stream when a command ends: Success,
NonZeroExitCode with the exit code in details.causes, or a Failure naming what
went wrong. Versions 2 and 3 write only the error text, and nothing on success.
This module only builds bytes; it must never write to a stream.
"""

from __future__ import annotations

import json
from typing import Any

from runtime import errors

NON_ZERO_EXIT_CODE = "NonZeroExitCode"
EXIT_CODE_CAUSE = "ExitCode"


def _dump(status: dict[str, Any]) -> bytes:
    return json.dumps(status, separators=(",", ":")).encode()


def success() -> bytes:
    return _dump({"metadata": {}, "status": "Success"})


def exit_code(code: int) -> bytes:
    """The status kubelet writes for a command that exited with `code` != 0."""
    return _dump(
        {
            "metadata": {},
            "status": "Failure",
            "message": f"command terminated with non-zero exit code: exit status {code}",
            "reason": NON_ZERO_EXIT_CODE,
            "details": {"causes": [{"reason": EXIT_CODE_CAUSE, "message": str(code)}]},
        }
    )


def for_exit(code: int | None) -> bytes:
    return success() if not code else exit_code(code)


_REASONS: list[tuple[type[BaseException], str, int]] = [
    (errors.NotFound, "NotFound", 404),
    (errors.InvalidArgument, "BadRequest", 400),
    (errors.FailedPrecondition, "BadRequest", 400),
    (errors.Unimplemented, "MethodNotAllowed", 405),
    (errors.DeadlineExceeded, "Timeout", 504),
]


def failure(exc: BaseException) -> bytes:
    """A Failure status for an error that kept the command from running."""
    message = str(exc) or type(exc).__name__
    for cls, reason, code in _REASONS:
        if isinstance(exc, cls):
            return _dump(
                {
                    "metadata": {},
                    "status": "Failure",
                    "message": message,
                    "reason": reason,
                    "code": code,
                }
            )
    message = f"error executing command in container: {message}"
    return _dump(
        {
            "metadata": {},
            "status": "Failure",
            "message": f"Internal error occurred: {message}",
            "reason": "InternalError",
            "details": {"causes": [{"message": message}]},
            "code": 500,
        }
    )


def legacy_text(code: int | None, exc: BaseException | None = None) -> bytes:
    """What protocol versions 2 and 3 write on the error stream (b"" on success)."""
    if exc is not None:
        return (str(exc) or type(exc).__name__).encode()
    if code:
        return f"command terminated with non-zero exit code: exit status {code}".encode()
    return b""
