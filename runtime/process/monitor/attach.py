"""Attach clients to the container init's stdio: their fds arrive over
SCM_RIGHTS; output goes to them as the log pump reads it, their stdin goes
to the init's stdin or pty.

A mixin of the container monitor (`container.ContainerMonitor`): it uses
the monitor's state in `base.MonitorBase`. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import socket

from runtime.process.monitor.base import Attacher, MonitorBase
from runtime.process.monitor.plumbing import Spec


class AttachMixin(MonitorBase):
    # attach for the streaming server
    def _attach(self, conn: socket.socket, req: Spec, fds: list[int]) -> None:
        got = dict(zip(list(req.get("fds") or []), fds, strict=False))
        a = Attacher(conn, got)
        for fd in (a.out, a.err):
            if fd >= 0:
                os.set_blocking(fd, False)
        if a.inp >= 0 and self.stdin_w < 0:
            os.close(a.inp)  # the container has no stdin to attach to
            a.inp = -1
        conn.setblocking(True)
        self.attachers[conn.fileno()] = a
        self.attach_fds[conn.fileno()] = a
        if a.inp >= 0:
            self.attach_fds[a.inp] = a
        try:
            conn.sendall(b'{"attached": true}\n')
        except OSError:
            self._detach_client(a, None)

    def _attach_read(self, fd: int) -> None:
        a = self.attach_fds[fd]
        if fd == a.conn.fileno():
            self._detach_client(a, None)  # the client went away
            return
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b""
        if data and self.stdin_w >= 0:
            with contextlib.suppress(OSError):
                os.write(self.stdin_w, data)
            return
        if data:
            return
        # the client closed its stdin
        del self.attach_fds[fd]
        os.close(fd)
        a.inp = -1
        proc = self.spec.get("process") or {}
        if self.master >= 0:
            with contextlib.suppress(OSError):
                os.write(self.master, b"\x04")
        elif proc.get("stdin_once") and self.stdin_w >= 0:
            os.close(self.stdin_w)
            self.stdin_w = -1

    def _detach_client(self, a: Attacher, reply: Spec | None) -> None:
        for fd in (a.conn.fileno(), a.inp):
            self.attach_fds.pop(fd, None)
        self.attachers.pop(a.conn.fileno(), None)
        a.close()
        if reply is not None:
            self._reply(a.conn, reply)
        else:
            a.conn.close()
