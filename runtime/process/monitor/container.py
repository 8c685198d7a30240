"""Container mode: the monitor of one container (skiff's containerd-shim or
conmon). Forks the container init (`init.container_child`), keeps its exit
status in `exit.json`, pumps its output to the CRI log, and serves the
control socket: start, reopen (log rotation), exec, exec_stream, attach,
resize, ping.

Single threaded (one select loop), which is what makes its fork, setns and
unshare calls safe. Standard library plus `runtime.linux` and
`runtime.process.logs` only.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import time

from machinery import libc
from runtime.process.logs import LineWriter
from runtime.process.monitor import control
from runtime.process.monitor.attach import AttachMixin
from runtime.process.monitor.execs import ExecMixin
from runtime.process.monitor.init import container_child, run_child, set_size
from runtime.process.monitor.logpump import LogPump
from runtime.process.monitor.plumbing import Spec, detach, report, write_json_atomic


class ContainerMonitor(ExecMixin, AttachMixin, LogPump):
    def setup(self) -> None:
        pid_mode = (self.spec.get("namespaces") or {}).get("pid") or "private"
        if pid_mode == "private":
            libc.unshare(libc.CLONE_NEWPID)
        elif pid_mode.startswith("/"):
            libc.setns_path(pid_mode, libc.CLONE_NEWPID)
        libc.prctl(libc.PR_SET_CHILD_SUBREAPER, 1)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        report_r, report_w = os.pipe2(os.O_CLOEXEC)
        start_r, start_w = os.pipe()
        proc = self.spec.get("process") or {}
        in_r = slave = -1
        if proc.get("tty"):
            # (a host pty: the container's devpts does not exist yet)
            self.master, slave = os.openpty()
        elif proc.get("stdin"):
            in_r, self.stdin_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            for fd in (out_r, err_r, report_r, start_w, self.stdin_w, self.master):
                if fd >= 0:
                    os.close(fd)
            run_child(
                container_child,
                report_w,
                self.spec,
                out_w,
                err_w,
                report_w,
                -1 if self.start_at_once else start_r,
                in_r,
                slave,
            )
        for fd in (out_w, err_w, report_w, start_r, in_r, slave):
            if fd >= 0:
                os.close(fd)
        self.init_pid = pid
        self.report_r = report_r
        self.start_w = start_w
        self.writers = {out_r: LineWriter("stdout"), err_r: LineWriter("stderr")}
        if self.master >= 0:
            self.writers[self.master] = LineWriter("stdout")
            self.stdin_w = self.master
        self.setup_error = ""
        self.cgroup_error = ""
        self.ready = False
        # the child builds the rootfs while the runtime answers CreateContainer;
        # StartContainer waits for its "R" (runc create runs in containerd's
        # StartContainer for the same reason)

    def join_cgroup(self) -> None:
        """Move the init into the container's cgroup where it cannot join
        cheaply itself (no `cgroup_self` files: cgroup v2). Done here, after
        the report and while the init builds its rootfs, because a write to
        `cgroup.procs` waits for an RCU grace period (~12 ms on a busy host):
        in parallel it costs StartContainer nothing. The init cannot exec
        before this returns (the monitor is single threaded and only then
        serves "start")."""
        if self.spec.get("cgroup_self"):
            return
        try:
            for f in self.spec.get("cgroup_procs") or []:
                with open(f, "w") as fh:
                    fh.write(str(self.init_pid))
        except ProcessLookupError:
            pass  # the init already failed: its own report says why
        except OSError as exc:
            self.cgroup_error = f"joining the container's cgroup: {exc}"
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.init_pid, signal.SIGKILL)

    def _wait_ready(self) -> bool:
        if self.ready:
            return True
        if self.report_r < 0:
            return False
        msg = os.read(self.report_r, 4096)
        if msg.startswith(b"R") and not self.cgroup_error:
            self.ready = True
            # an init that does not wait for "start" may have written its
            # exec error right behind
            head, _, self.after_ready = msg.partition(b"\n")
            with contextlib.suppress(ValueError):
                self.user = json.loads(head[1:] or b"{}")
            return True
        self.setup_error = (
            self.cgroup_error
            or msg[1:].decode(errors="replace")
            or "container init exited during setup"
        )
        os.close(self.report_r)
        self.report_r = -1
        return False

    def run(self, autostart: bool = False) -> int:
        """Serve until the init exits. `autostart` (StartContainer spawned
        us): let the init exec as soon as it is ready and put the outcome in
        the one report, which spares the runtime a round trip on the control
        socket (and the init a wait for "start")."""
        sock = control.listen(self.dir)
        lfd = sock.fileno()
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        rep: Spec = {"pid": os.getpid(), "init_pid": self.init_pid}
        if autostart:
            self.join_cgroup()
            started = self._start()
            if "error" in started:
                rep["start_error"] = started["error"]
            else:
                rep.update(started)
            report(rep)
        else:
            report(rep)
            self.join_cgroup()
        self._reap()
        while self.init_status is None:
            timeout = None
            now = time.monotonic()
            for job in self.jobs.values():
                if job.deadline is not None and job.status is None:
                    left = max(0.0, job.deadline - now)
                    timeout = left if timeout is None else min(timeout, left)
            rfds = [lfd, wake_r, *self.writers, *self.job_fds, *self.stream_fds, *self.attach_fds]
            try:
                ready, _, _ = select.select(rfds, [], [], timeout)
            except InterruptedError:
                ready = []
            for fd in ready:
                if fd == wake_r:
                    with contextlib.suppress(BlockingIOError):
                        os.read(wake_r, 4096)
                    self._reap()
                elif fd == lfd:
                    self._accept(sock)
                elif fd in self.writers:
                    self._pump(fd)
                elif fd in self.job_fds:
                    self._job_read(fd)
                elif fd in self.stream_fds:
                    self._stream_read(fd)
                elif fd in self.attach_fds:
                    self._attach_read(fd)
            self._check_deadlines()
            self._finish_jobs()
            self._finish_streams()
        self._drain()
        self._write_exit()
        for a in list(self.attachers.values()):
            self._detach_client(a, {"exited": True})
        for pid in [*self.jobs, *self.streams]:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        return 0

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.init_pid:
                self.init_status = status
            elif pid in self.jobs:
                self.jobs[pid].status = status
            elif pid in self.streams:
                self.streams[pid].status = status

    def _write_exit(self) -> None:
        status = self.init_status or 0
        if os.WIFSIGNALED(status):
            code = 128 + os.WTERMSIG(status)
            sig = os.WTERMSIG(status)
        else:
            code = os.WEXITSTATUS(status)
            sig = 0
        oom = False
        for f in self.spec.get("oom_files") or []:
            try:
                with open(f) as fh:
                    for line in fh:
                        k, _, v = line.partition(" ")
                        if k == "oom_kill" and int(v) > 0:
                            oom = True
            except (OSError, ValueError):
                pass
        if not self.ready and not self.setup_error and self.report_r >= 0:
            os.set_blocking(self.report_r, False)
            with contextlib.suppress(OSError):
                self._wait_ready()
        write_json_atomic(
            os.path.join(self.spec["exit_dir"], "exit.json"),
            {
                "exit_code": code,
                "signal": sig,
                "finished_at": time.time_ns(),
                "oom_killed": oom,
                "start_error": self.setup_error,
            },
        )

    # control socket
    def _accept(self, sock: socket.socket) -> None:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        conn.settimeout(5)
        fds: list[int] = []
        try:
            req, fds = control.read_request(conn)
            op = req.get("op")
            if op == "exec_stream":
                self._exec_stream(conn, req, fds)
                fds = []
                return
            if op == "attach":
                self._attach(conn, req, fds)
                fds = []
                return
            if op == "resize_init":
                if self.master >= 0:
                    set_size(self.master, int(req["width"]), int(req["height"]))
                self._reply(conn, {"ok": True})
                return
            if op == "resize":
                job = self.streams.get(int(req.get("pid", 0)))
                if job is not None and job.master >= 0:
                    set_size(job.master, int(req["width"]), int(req["height"]))
                self._reply(conn, {"ok": True})
                return
            if op == "start":
                self._reply(conn, self._start())
            elif op == "reopen":
                self.log.close()
                self.log = self._open_log()
                self._reply(conn, {"ok": True})
            elif op == "exec":
                self._exec(conn, req)
                return
            elif op == "ping":
                self._reply(conn, {"ok": True, "init_pid": self.init_pid})
            else:
                self._reply(conn, {"error": f"unknown op {op!r}"})
        except (OSError, ValueError, KeyError) as exc:
            with contextlib.suppress(OSError):
                self._reply(conn, {"error": str(exc)})
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _start(self) -> Spec:
        if self.start_w < 0:
            return {"error": "container already started"}
        if not self._wait_ready():
            return {"error": self.setup_error}
        if not self.start_at_once:
            os.write(self.start_w, b"S")
        os.close(self.start_w)
        self.start_w = -1
        started = time.time_ns()
        msg = self.after_ready
        while True:
            chunk = os.read(self.report_r, 4096)
            if not chunk:
                break
            msg += chunk
        os.close(self.report_r)
        if msg.startswith(b"E"):
            return {"error": msg[1:].decode(errors="replace")}
        return {"ok": True, "started_at": started, "user": self.user}


def run_container(spec: Spec, fork: bool = True, autostart: bool = False) -> int:
    detach(fork)
    os.umask(0o022)
    mon = ContainerMonitor(spec)
    mon.start_at_once = autostart and bool(spec.get("cgroup_self"))
    try:
        mon.setup()
    except Exception as exc:
        report(
            {
                "error": str(exc)
                if isinstance(exc, OSError | RuntimeError)
                else f"{type(exc).__name__}: {exc}"
            }
        )
        return 1
    return mon.run(autostart)
