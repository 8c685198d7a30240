"""The container monitor's control socket: `monitor.sock` under the
container's state dir (0600), one JSON request line per connection (with up
to three fds over SCM_RIGHTS), one JSON reply line.

Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from typing import Any

Request = tuple[dict[str, Any], list[int]]


def listen(state_dir: str) -> socket.socket:
    """Bind `monitor.sock` in `state_dir` (through /proc/self/fd, so a long
    path fits) and listen."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dfd = os.open(state_dir, os.O_DIRECTORY | os.O_RDONLY)
    path = f"/proc/self/fd/{dfd}/monitor.sock"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(state_dir, "monitor.sock"))
    sock.bind(path)
    os.chmod(os.path.join(state_dir, "monitor.sock"), 0o600)
    sock.listen(16)
    os.close(dfd)
    return sock


def read_request(conn: socket.socket) -> Request:
    """The request line and the fds sent with it (the caller closes them)."""
    line, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    try:
        while line and not line.endswith(b"\n"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            line += chunk
        req: dict[str, Any] = json.loads(line or b"{}")
    except BaseException:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        raise
    return req, fds


def reply(conn: socket.socket, obj: Any) -> None:
    """Send one reply line and close the connection (a gone client is fine)."""
    try:
        conn.sendall((json.dumps(obj) + "\n").encode())
    except OSError:
        pass
    finally:
        conn.close()
