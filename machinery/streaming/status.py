"""metav1.Status objects as the remote-command error channel carries them.

Version 4 of the remote-command protocol (and the WebSocket v4/v5 protocols)
write one JSON metav1.Status on the error stream when a command ends: Success,
NonZeroExitCode with the exit code in details.causes, or a Failure naming what
went wrong. Versions 2 and 3 write only the error text, and nothing on success.
Builders for the server and `outcome` for the client; which runtime error maps
to which reason is the server's business. This module never writes to a stream.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

NON_ZERO_EXIT_CODE = "NonZeroExitCode"
EXIT_CODE_CAUSE = "ExitCode"


def dump(status: dict[str, Any]) -> bytes:
    return json.dumps(status, separators=(",", ":")).encode()


def success() -> bytes:
    return dump({"metadata": {}, "status": "Success"})


def exit_code(code: int) -> bytes:
    """The status kubelet writes for a command that exited with `code` != 0."""
    return dump(
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


def legacy_exit_text(code: int | None) -> bytes:
    """What protocol versions 2 and 3 write for an exit (b"" on success)."""
    if code:
        return f"command terminated with non-zero exit code: exit status {code}".encode()
    return b""


@dataclass(frozen=True)
class Outcome:
    """How a remote command ended, as a client reads the error stream."""

    exit_code: int | None  # the command's code; None when it did not run
    message: str = ""  # why it failed, when it did not merely exit non-zero


def outcome(data: bytes, *, status_json: bool = True) -> Outcome:
    """Read what the error stream carried: v4 JSON Status, or v2/v3 text."""
    text = data.decode(errors="replace").strip()
    if not text:
        return Outcome(0)
    if not status_json:
        prefix = "command terminated with non-zero exit code: exit status "
        if text.startswith(prefix) and text[len(prefix) :].isdigit():
            return Outcome(int(text[len(prefix) :]))
        return Outcome(None, text)
    try:
        obj = json.loads(text)
    except ValueError:
        return Outcome(None, text)
    if not isinstance(obj, dict):
        return Outcome(None, text)
    if obj.get("status") == "Success":
        return Outcome(0)
    if obj.get("reason") == NON_ZERO_EXIT_CODE:
        for cause in (obj.get("details") or {}).get("causes") or []:
            if isinstance(cause, dict) and cause.get("reason") == EXIT_CODE_CAUSE:
                try:
                    return Outcome(int(cause.get("message", "")))
                except ValueError:
                    break
    return Outcome(None, str(obj.get("message") or text))
