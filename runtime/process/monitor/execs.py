"""Exec in a running container, for ExecSync (output collected, with a
timeout that kills the process group) and for the streaming server (stdio
fds passed over SCM_RIGHTS; with a tty the monitor relays the pty).

A mixin of the container monitor (`container.ContainerMonitor`): it uses
the monitor's state in `base.MonitorBase`. Standard library only.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import time

from runtime.process.monitor.base import ExecJob, MonitorBase, StreamJob
from runtime.process.monitor.init import container_pty, exec_child, run_child, set_size
from runtime.process.monitor.plumbing import Spec

EXEC_OUTPUT_MAX = 16 << 20  # per stream of an ExecSync, as containerd caps it


class ExecMixin(MonitorBase):
    def _exec(self, conn: socket.socket, req: Spec) -> None:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        rep_r, rep_w = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:
            os.close(out_r)
            os.close(err_r)
            os.close(rep_r)
            run_child(exec_child, rep_w, self.spec, self.init_pid, req, out_w, err_w)
        for fd in (out_w, err_w, rep_w):
            os.close(fd)
        timeout = float(req.get("timeout") or 0)
        job = ExecJob(
            conn, pid, (out_r, err_r, rep_r), time.monotonic() + timeout if timeout > 0 else None
        )
        self.jobs[pid] = job
        for fd in job.fds:
            self.job_fds[fd] = job

    def _job_read(self, fd: int) -> None:
        job = self.job_fds[fd]
        data = os.read(fd, 65536)
        if data:
            # keep at most EXEC_OUTPUT_MAX per stream; keep reading so the
            # process never blocks on a full pipe
            room = EXEC_OUTPUT_MAX - len(job.fds[fd])
            if room > 0:
                job.fds[fd] += data[:room]
        else:
            del self.job_fds[fd]
            os.close(fd)

    def _check_deadlines(self) -> None:
        now = time.monotonic()
        for job in self.jobs.values():
            if job.status is None and job.deadline is not None and now >= job.deadline:
                job.timed_out = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(job.pid, signal.SIGKILL)
                job.deadline = None

    def _finish_jobs(self) -> None:
        for pid, job in list(self.jobs.items()):
            if job.status is None:
                continue
            open_fds = [fd for fd in job.fds if fd in self.job_fds]
            if open_fds and not job.timed_out:
                # the process exited: collect what is buffered, do not wait for
                # grandchildren that still hold the pipes
                for fd in open_fds:
                    os.set_blocking(fd, False)
                    with contextlib.suppress(BlockingIOError):
                        while data := os.read(fd, 65536):
                            job.fds[fd] += data
            for fd in open_fds:
                del self.job_fds[fd]
                os.close(fd)
            del self.jobs[pid]
            status = job.status
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
            err = bytes(job.fds[job.rep_r])
            reply: Spec = {
                "exit_code": code,
                "stdout": base64.b64encode(bytes(job.fds[job.out_r])).decode(),
                "stderr": base64.b64encode(bytes(job.fds[job.err_r])).decode(),
                "timed_out": job.timed_out,
            }
            if err.startswith(b"E"):
                reply["exec_error"] = err[1:].decode(errors="replace")
            self._reply(job.conn, reply)

    # exec for the streaming server
    def _exec_stream(self, conn: socket.socket, req: Spec, fds: list[int]) -> None:
        names = list(req.get("fds") or [])
        got = dict(zip(names, fds, strict=False))
        tty = bool(req.get("tty"))
        rep_r, rep_w = os.pipe2(os.O_CLOEXEC)
        master = slave = -1
        if tty:
            master, slave = container_pty(self.init_pid)
            if req.get("width"):
                set_size(master, int(req["width"]), int(req["height"]))
        pid = os.fork()
        if pid == 0:
            os.close(rep_r)
            if master >= 0:
                os.close(master)
            run_child(
                exec_child, rep_w, self.spec, self.init_pid, req,
                got.get("stdout", -1), got.get("stderr", -1), got.get("stdin", -1), slave,
            )  # fmt: skip
        os.close(rep_w)
        job = StreamJob(conn, pid, rep_r)
        if tty:
            os.close(slave)
            job.master = master
            job.out_fd = got.pop("stdout", -1)
            job.in_fd = got.pop("stdin", -1)
            self.stream_fds[master] = job
            if job.in_fd >= 0:
                self.stream_fds[job.in_fd] = job
        for fd in got.values():
            os.close(fd)
        conn.setblocking(True)
        self.streams[pid] = job
        self.stream_fds[conn.fileno()] = job
        try:
            conn.sendall((json.dumps({"started": pid}) + "\n").encode())
        except OSError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)

    def _stream_read(self, fd: int) -> None:
        job = self.stream_fds[fd]
        if fd == job.conn.fileno():
            # the client went away (or cancelled): kill the exec
            del self.stream_fds[fd]
            with contextlib.suppress(ProcessLookupError):
                os.killpg(job.pid, signal.SIGKILL)
            return
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b""
        if fd == job.master:
            if not data:
                del self.stream_fds[fd]
                return
            with contextlib.suppress(OSError):
                if job.out_fd >= 0:
                    os.write(job.out_fd, data)
        elif fd == job.in_fd:
            if data:
                with contextlib.suppress(OSError):
                    os.write(job.master, data)
            else:
                with contextlib.suppress(OSError):
                    os.write(job.master, b"\x04")
                del self.stream_fds[fd]
                os.close(fd)
                job.in_fd = -1

    def _finish_streams(self) -> None:
        for pid, job in list(self.streams.items()):
            if job.status is None:
                continue
            if job.master >= 0:
                os.set_blocking(job.master, False)
                with contextlib.suppress(OSError):
                    while data := os.read(job.master, 65536):
                        if job.out_fd >= 0:
                            os.write(job.out_fd, data)
            for fd in (job.master, job.out_fd, job.in_fd):
                if fd >= 0:
                    self.stream_fds.pop(fd, None)
                    with contextlib.suppress(OSError):
                        os.close(fd)
            self.stream_fds.pop(job.conn.fileno(), None)
            del self.streams[pid]
            err = b""
            with contextlib.suppress(OSError):
                err = os.read(job.rep_r, 4096)
            os.close(job.rep_r)
            status = job.status
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
            reply: Spec = {"exit_code": code}
            if err.startswith(b"E"):
                reply["exec_error"] = err[1:].decode(errors="replace")
            self._reply(job.conn, reply)
