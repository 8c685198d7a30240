"""The container monitor's state, shared by its parts (the log pump, exec
and attach mixins, and `container.ContainerMonitor` that ties them to the
init's lifecycle and the control socket).

Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import socket
from typing import Any

from runtime.process.logs import LineWriter
from runtime.process.monitor import control
from runtime.process.monitor.plumbing import Spec


class Attacher:
    """One client attached to the container's stdio (fds over SCM_RIGHTS)."""

    def __init__(self, conn: socket.socket, fds: dict[str, int]) -> None:
        self.conn = conn
        self.out = fds.get("stdout", -1)
        self.err = fds.get("stderr", -1)
        self.inp = fds.get("stdin", -1)

    def close(self) -> None:
        for fd in (self.out, self.err, self.inp):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.out = self.err = self.inp = -1


class ExecJob:
    def __init__(
        self, conn: socket.socket, pid: int, fds: tuple[int, int, int], deadline: float | None
    ) -> None:
        self.conn = conn
        self.pid = pid
        self.out_r, self.err_r, self.rep_r = fds
        self.fds = {fd: bytearray() for fd in fds}
        self.deadline = deadline
        self.status: int | None = None
        self.timed_out = False


class StreamJob:
    """An exec for the streaming server: stdio fds came over SCM_RIGHTS; with
    a tty the monitor relays between the pty master and them."""

    def __init__(self, conn: socket.socket, pid: int, rep_r: int) -> None:
        self.conn = conn
        self.pid = pid
        self.rep_r = rep_r
        self.status: int | None = None
        self.master = -1
        self.out_fd = -1
        self.in_fd = -1


class MonitorBase:
    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.dir: str = spec["state_dir"]
        self.log_path: str = spec["log_path"]
        self.log = self._open_log()
        self.writers: dict[int, LineWriter] = {}
        self.init_pid = 0
        self.init_status: int | None = None
        self.jobs: dict[int, ExecJob] = {}
        self.job_fds: dict[int, ExecJob] = {}
        self.streams: dict[int, StreamJob] = {}
        self.stream_fds: dict[int, StreamJob] = {}
        self.master = -1  # the init's pty (tty containers)
        self.stdin_w = -1  # the init's stdin (stdin containers), or the pty
        self.attachers: dict[int, Attacher] = {}  # by conn fd
        self.attach_fds: dict[int, Attacher] = {}  # conn and stdin fds
        self.report_r = -1
        self.start_w = -1
        self.setup_error = ""
        self.cgroup_error = ""
        self.ready = False
        self.after_ready = b""
        self.user: Spec = {}
        # spawned by StartContainer, the init joins its cgroup itself (v1):
        # it execs as soon as its root is ready, without waiting for "start"
        self.start_at_once = False

    def _open_log(self) -> Any:
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        # 0640: container output is not for every host user
        fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o640)
        return open(fd, "ab", buffering=0)

    def _reply(self, conn: socket.socket, obj: Any) -> None:
        control.reply(conn, obj)
