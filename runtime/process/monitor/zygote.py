"""The monitor zygote: one process, started by the runtime when a monitor
is asked for, that forks the monitors on request so that they share its
pages, and dials TCP into pod network namespaces for port-forward. It exits
when no request came for a while (runtime.process.zygote).

Standard library plus `runtime.linux` only.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import socket
from collections.abc import Callable

from machinery import libc
from runtime.process.monitor.plumbing import Spec, report


def _dial(conn: socket.socket, req: Spec) -> None:
    """In a zygote child: enter the pod's network namespace, connect to
    localhost:port, and hand the connected socket back over SCM_RIGHTS."""
    code = 1
    try:
        libc.setns_path(str(req["netns"]), libc.CLONE_NEWNET)
        with socket.create_connection(("127.0.0.1", int(req["port"])), timeout=10) as s:
            socket.send_fds(conn, [b'{"ok": true}\n'], [s.fileno()])
        code = 0
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            conn.sendall((json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n").encode())
    finally:
        os._exit(code)


def run_zygote(listen_fd: int, idle: float, main: Callable[..., int]) -> int:
    """Fork monitors on request, so that they share this process's pages
    (after gc.freeze, the collector does not touch them): a monitor then
    costs little more than its own heap. One JSON line per connection
    (`{"mode", "spec"}`); the forked monitor answers on the connection. Dies
    with the runtime that started it (PDEATHSIG); exits (0) once no
    connection came for `idle` seconds (the runtime keeps the socket, so one
    that comes as it exits waits for the next zygote)."""
    libc.prctl(libc.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:
        return 0
    sock = socket.socket(fileno=listen_fd)
    libc.set_name("skiff-zygote")  # also loads the libc handle before freezing
    # monitors are not waited for: the kernel reaps them (children reset this)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    gc.collect()
    gc.freeze()
    libc.release_free_memory()  # what imports left free, before monitors inherit it
    waiting = select.poll()
    waiting.register(sock, select.POLLIN)
    while True:
        if not waiting.poll(int(idle * 1000)):
            return 0
        try:
            conn, _ = sock.accept()
        except InterruptedError:
            continue
        try:
            conn.settimeout(5)
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = conn.recv(4096)
                if not chunk:
                    break
                buf += chunk
            req = json.loads(buf)
        except (OSError, ValueError):
            conn.close()
            continue
        pid = os.fork()
        if pid == 0 and req.get("mode") == "dial":
            _dial(conn, req)
        if pid == 0:
            code = 1
            try:
                sock.close()
                os.dup2(conn.fileno(), 1)
                conn.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                code = main([str(req["mode"]), str(req["spec"])], fork=False)
            except BaseException as exc:
                with contextlib.suppress(BaseException):
                    report({"error": f"{type(exc).__name__}: {exc}"})
            finally:
                os._exit(code)
        conn.close()
