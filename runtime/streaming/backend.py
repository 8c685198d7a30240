"""The seam between the streaming server and the runtime that runs things.

The server speaks the wire protocols; a `StreamingBackend` does the work:
start a command in a container, attach to a container's stdio, or dial a port
inside a pod's network namespace. The runtime implements it (through the
per-container monitor); `tests.fakes.streaming_backend` implements it with plain
host processes for tests.

File descriptors, not Python streams, cross the seam so the runtime can pass
them to the monitor process (SCM_RIGHTS) and the exec'd process writes
straight into the server's pipes:

- The server creates a pipe per requested stream and passes the container's
  ends in `Stdio` (the read end for stdin, write ends for stdout and stderr).
  The server closes its copies of those fds as soon as `exec`/`attach`
  returns or raises, so a backend must `os.dup` (or send over SCM_RIGHTS)
  whatever it keeps.
- With `tty=True` there is no stderr: the pty's output goes to `stdout`.
- EOF on `stdin` is the client's half-close. For a tty the backend may turn it
  into the terminal's EOF character.
- Once `Session.wait()` has returned, the backend holds none of these fds and
  no process of this exec remains. The server reads stdout/stderr until EOF
  (bounded by its drain timeout) and only then reports the exit status.

Errors: `exec`, `attach` and `port_forward` raise `runtime.errors.NotFound`
for an unknown container or sandbox and `runtime.errors.FailedPrecondition`
for a container that is not running; the server reports them on the stream's
error channel. This module must never contain an implementation.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

TermSize = tuple[int, int]
"""A terminal size as (width, height), i.e. (columns, rows)."""


@dataclass(frozen=True)
class Stdio:
    """The container's ends of the server's pipes; None for a stream not requested."""

    stdin: int | None
    stdout: int | None
    stderr: int | None


class Session(Protocol):
    """A running exec, or one attachment to a container."""

    def wait(self) -> int | None:
        """Block until the exec'd process exits (exec) or the container exits or
        the attachment is cancelled (attach). Return the exit code for exec
        (128+N for death by signal N), None for attach."""
        ...

    def resize(self, width: int, height: int) -> None:
        """Set the terminal size (columns, rows); ignored without a tty."""
        ...

    def cancel(self) -> None:
        """The client went away. Exec: kill the process (and its process
        group) so `wait()` returns promptly. Attach: detach only, leaving the
        container running. Idempotent; safe after `wait()` returned."""
        ...


class StreamingBackend(Protocol):
    """What the streaming server needs from the runtime."""

    def exec(
        self,
        container_id: str,
        cmd: Sequence[str],
        tty: bool,
        stdio: Stdio,
        size: TermSize | None = None,
    ) -> Session:
        """Start `cmd` in the running container; return once started. With
        `tty`, create the pty with `size` (when the client sent one) before
        the command starts."""
        ...

    def attach(
        self, container_id: str, tty: bool, stdio: Stdio, size: TermSize | None = None
    ) -> Session:
        """Connect to the running container's stdio (stdin only if the
        container was created with `stdin`); return once attached. `size`,
        if given, is applied to the container's tty."""
        ...

    def port_forward(self, sandbox_id: str, port: int) -> socket.socket:
        """Return a TCP socket connected to `port` on localhost inside the
        sandbox's network namespace. The server owns and closes it (and
        makes it blocking). Dial from a process inside the namespace (the
        sandbox monitor) and pass the fd back over SCM_RIGHTS: never setns
        or fork in the server's threads."""
        ...
