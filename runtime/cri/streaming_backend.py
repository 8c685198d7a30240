"""The runtime's side of the streaming server (`runtime.streaming`): exec
through the container's monitor (stdio fds passed over SCM_RIGHTS, so the
exec'd process writes straight into the server's pipes), and port-forward
dialled from a zygote child inside the pod's network namespace; attach
hands the client's fds to the monitor, which copies the container's output
to them and their input to the container's stdin.

Never forks or enters a namespace in the calling (server) thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Sequence

from runtime import errors
from runtime.cri.service import RuntimeService
from runtime.process import spawn
from runtime.streaming import Session, Stdio, TermSize


class MonitorSession:
    """One streaming exec: the monitor answers on `sock` when it exits;
    closing our end makes the monitor kill it."""

    def __init__(
        self, svc: RuntimeService, cid: str, sock: socket.socket, pid: int, attach: bool = False
    ) -> None:
        self.svc = svc
        self.cid = cid
        self.sock = sock
        self.pid = pid
        self.attach = attach
        self.file = sock.makefile("rb")

    def wait(self) -> int | None:
        line = self.file.readline()
        with contextlib.suppress(OSError):
            self.file.close()
            self.sock.close()
        if not line or self.attach:
            return None
        reply = json.loads(line)
        code: int = int(reply.get("exit_code", 1))
        return code

    def resize(self, width: int, height: int) -> None:
        req: dict[str, object] = {"width": width, "height": height}
        req.update({"op": "resize_init"} if self.attach else {"op": "resize", "pid": self.pid})
        with contextlib.suppress(OSError, spawn.MonitorError):
            self.svc.host.call_monitor(self.svc.container_state(self.cid), req, 10)

    def cancel(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)


class RuntimeStreamingBackend:
    def __init__(self, svc: RuntimeService) -> None:
        self.svc = svc

    def exec(
        self,
        container_id: str,
        cmd: Sequence[str],
        tty: bool,
        stdio: Stdio,
        size: TermSize | None = None,
    ) -> Session:
        c = self.svc.running(container_id)
        req: dict[str, object] = {"op": "exec_stream", "args": list(cmd), "tty": tty}
        if size is not None:
            req["width"], req["height"] = size
        reply, sock = self._send(c.id, req, stdio)
        if "started" not in reply:
            sock.close()
            raise errors.Unknown(f"exec in container {c.id}: {reply.get('error', 'no answer')}")
        sock.settimeout(None)
        return MonitorSession(self.svc, c.id, sock, int(str(reply["started"])))

    def _send(
        self, cid: str, req: dict[str, object], stdio: Stdio
    ) -> tuple[dict[str, object], socket.socket]:
        """Send `req` with the stdio fds to the monitor; return its first
        answer and the connection (kept open for the session)."""
        names: list[str] = []
        fds: list[int] = []
        for name, fd in (
            ("stdin", stdio.stdin),
            ("stdout", stdio.stdout),
            ("stderr", stdio.stderr),
        ):
            if fd is not None:
                names.append(name)
                fds.append(fd)
        req["fds"] = names
        dfd = os.open(self.svc.container_state(cid), os.O_DIRECTORY | os.O_RDONLY | os.O_CLOEXEC)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(10)
            sock.connect(f"/proc/self/fd/{dfd}/monitor.sock")
            socket.send_fds(sock, [(json.dumps(req) + "\n").encode()], fds)
            line = sock.makefile("rb").readline()
        except OSError as exc:
            sock.close()
            raise errors.Unknown(f"container {cid}: {exc}") from None
        finally:
            os.close(dfd)
        reply: dict[str, object] = json.loads(line or b"{}")
        return reply, sock

    def attach(
        self, container_id: str, tty: bool, stdio: Stdio, size: TermSize | None = None
    ) -> Session:
        c = self.svc.running(container_id)
        reply, sock = self._send(c.id, {"op": "attach"}, stdio)
        if "attached" not in reply:
            sock.close()
            raise errors.Unknown(f"attach to {c.id}: {reply.get('error', 'no answer')}")
        sock.settimeout(None)
        session = MonitorSession(self.svc, c.id, sock, 0, attach=True)
        if size is not None and tty:
            session.resize(*size)
        return session

    def port_forward(self, sandbox_id: str, port: int) -> socket.socket:
        s = self.svc.sandboxes.get(sandbox_id)
        netns = self.svc.ns_path(s.id, "net")
        if s.host_network or not netns.exists():
            return socket.create_connection(("127.0.0.1", port), timeout=10)
        try:
            return self.svc.host.dial(str(netns), port)
        except (OSError, spawn.MonitorError) as exc:
            raise errors.Unavailable(f"port-forward to {sandbox_id}:{port}: {exc}") from None
