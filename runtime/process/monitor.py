"""The per-container and per-sandbox monitor: skiff's containerd-shim/conmon.

Run as a standalone script (`python -S monitor.py container|sandbox SPEC`),
never imported by the runtime. It detaches (forks, the first process exits,
the second calls setsid), so it outlives a restart or `kill -9` of the
runtime.

* sandbox mode: unshares the pod's network, IPC and UTS namespaces (and
  optionally a PID namespace with a child as its PID 1), sets the hostname,
  sysctls and brings `lo` up, reports its pids on stdout, then waits for
  SIGTERM. The runtime pins the namespaces by bind mounts.
* container mode: forks the container init, which joins the pod namespaces
  and the cgroup, builds the rootfs in its own mount namespace, pivots, and
  waits for "start" before exec. The monitor writes the init's stdout/stderr
  to the CRI log, keeps the exit status in `exit.json`, and serves a small
  JSON-lines control socket: start, reopen (log rotation), exec (ExecSync
  with a timeout that kills the exec'd process group).

It must stay small: standard library plus `runtime.linux` and
`runtime.process.logs` only; never grpc, protobuf or pyroute2. It is single
threaded, which is what makes its fork/setns/unshare calls safe.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import fcntl
import gc
import json
import os
import select
import signal
import socket
import struct
import sys
import termios
import time
from typing import Any

if __name__ == "__main__":  # started as a script with -S: find our packages
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from runtime.linux import caps, libc, mounts, netdev, seccomp, users
from runtime.process.logs import LineWriter

Spec = dict[str, Any]
EXEC_OUTPUT_MAX = 16 << 20  # per stream of an ExecSync, as containerd caps it


def _write_json_atomic(path: str, obj: Any) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _reset_signals() -> None:
    signal.set_wakeup_fd(-1)
    for sig in (
        signal.SIGCHLD,
        signal.SIGTERM,
        signal.SIGINT,
        signal.SIGPIPE,
        signal.SIGXFSZ,
        signal.SIGHUP,
    ):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def _detach(fork: bool = True) -> None:
    """Fork; the parent exits at once (the runtime reaps it), the child
    becomes a session leader that init adopts. A child of the zygote needs
    no fork: the zygote never waits for it and init adopts it anyway."""
    if fork and os.fork() > 0:
        os._exit(0)
    os.setsid()


def _write_line(obj: Any) -> None:
    os.write(1, (json.dumps(obj) + "\n").encode())


def _report(obj: Any) -> None:
    """The final report: then stdout is closed (the runtime reads to EOF)."""
    _write_line(obj)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)


def _write_sysctl(name: str, value: str) -> None:
    path = "/proc/sys/" + name.replace(".", "/")
    if ".." in name or "/" in name:
        raise ValueError(f"bad sysctl name {name!r}")
    with open(path, "w") as f:
        f.write(value)


# --- sandbox mode -------------------------------------------------------------


def _exec_pause(pause: str) -> None:
    """Become the tiny pause binary: it holds the namespaces; with SIGCHLD
    ignored (kept across exec) the kernel reaps orphans for it."""
    _reset_signals()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, 1 << 16)
    os.execv(pause, ["/pause"])


def _pid1(pause: str) -> None:
    """PID 1 of a pod's shared PID namespace: reap children, exit on TERM."""
    if pause:
        _exec_pause(pause)
    _reset_signals()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD, signal.SIGTERM, signal.SIGINT])
    while True:
        sig = signal.sigwait([signal.SIGCHLD, signal.SIGTERM, signal.SIGINT])
        if sig != signal.SIGCHLD:
            os._exit(0)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass


def run_sandbox(spec: Spec, fork: bool = True) -> int:
    _detach(fork)
    try:
        flags = 0
        ns = spec["namespaces"]
        if ns.get("net"):
            flags |= libc.CLONE_NEWNET
        if ns.get("ipc"):
            flags |= libc.CLONE_NEWIPC
        if ns.get("uts"):
            flags |= libc.CLONE_NEWUTS
        if flags:
            libc.unshare(flags)
        if ns.get("uts") and spec.get("hostname"):
            libc.sethostname(spec["hostname"])
        if ns.get("net"):
            netdev.link_up("lo")
        for name, value in (spec.get("sysctls") or {}).items():
            _write_sysctl(name, str(value))
        # cgroup v1: join cheaply ourselves (`tasks`), before the PID 1 fork
        # so that it inherits the cgroup
        joined = bool(spec.get("cgroup_self"))
        for f in spec.get("cgroup_self") or []:
            with open(f, "w") as fh:
                fh.write("0")
        pid1 = 0
        if ns.get("pid"):
            libc.unshare(libc.CLONE_NEWPID)
            pid1 = os.fork()
            if pid1 == 0:
                try:
                    _pid1(spec.get("pause") or "")
                finally:
                    os._exit(0)
        # early report: the runtime pins the namespaces and runs CNI while
        # we join the cgroup (a `cgroup.procs` write waits for an RCU grace
        # period)
        _write_line({"pid": os.getpid(), "pid1": pid1, "early": True})
        for f in [] if joined else spec.get("cgroup_procs") or []:
            # only the process that stays (pid1 when there is one)
            with open(f, "w") as fh:
                fh.write(str(pid1 or os.getpid()))
    except Exception as exc:  # reported to the runtime, which fails the RPC
        _report({"error": f"{type(exc).__name__}: {exc}"})
        return 1
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD, signal.SIGTERM, signal.SIGINT])
    _report({"pid": os.getpid(), "pid1": pid1})
    if pid1:
        # PID 1 holds the pod's namespaces; the runtime pins them from it
        return 0
    if spec.get("pause"):
        _exec_pause(spec["pause"])
    while True:
        sig = signal.sigwait([signal.SIGCHLD, signal.SIGTERM, signal.SIGINT])
        if sig == signal.SIGCHLD:
            with contextlib.suppress(ChildProcessError):
                while os.waitpid(-1, os.WNOHANG)[0] > 0:
                    pass
            continue
        if pid1:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid1, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid1, 0)
        return 0


# --- container process setup (runs in forked children) -------------------------


def _resolve_creds(proc: Spec) -> users.Creds:
    def read(path: str) -> str:
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return ""

    u = proc.get("user") or {}
    return users.resolve(
        users.parse_passwd(read("/etc/passwd")),
        users.parse_group(read("/etc/group")),
        u.get("uid"),
        u.get("username") or "",
        u.get("gid"),
        list(u.get("groups") or []),
        u.get("groupname") or "",
    )


def _exec_process(proc: Spec, creds: users.Creds, args: list[str]) -> None:
    """Switch credentials, capabilities, no_new_privs and seccomp; exec."""
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as f:
        f.write(str(proc.get("oom_score_adj", 0)))
    env: dict[str, str] = {}
    for kv in proc.get("env") or []:
        k, _, v = kv.partition("=")
        env[k] = v
    env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    env.setdefault("HOME", creds.home or "/")
    cwd = proc.get("cwd") or "/"
    os.chdir(cwd)
    bpf = base64.b64decode(proc.get("seccomp_bpf") or "")
    nnp = bool(proc.get("no_new_privs"))
    if bpf and not nnp:
        # without no_new_privs the filter needs CAP_SYS_ADMIN: load it while
        # we still hold it (as runc does)
        seccomp.load(bpf, no_new_privs=False)
    keep = list(proc.get("caps") or [])
    caps.drop_bounding(keep)
    libc.prctl(libc.PR_SET_KEEPCAPS, 1)
    os.setgroups(list(creds.groups))
    os.setresgid(creds.gid, creds.gid, creds.gid)
    os.setresuid(creds.uid, creds.uid, creds.uid)
    caps.set_caps(keep)
    if nnp:
        libc.prctl(libc.PR_SET_NO_NEW_PRIVS, 1)
        if bpf:
            seccomp.load(bpf, no_new_privs=True)
    _reset_signals()
    try:
        os.execvpe(args[0], args, env)
    except OSError as exc:
        raise OSError(exc.errno, f"exec {args[0]!r}: {exc.strerror}") from None


def _container_child(
    spec: Spec, out_w: int, err_w: int, report_w: int, start_r: int, in_r: int, tty: int
) -> None:
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    if tty >= 0:
        fcntl.ioctl(tty, termios.TIOCSCTTY, 0)
        for fd in (0, 1, 2):
            os.dup2(tty, fd)
    else:
        os.dup2(in_r if in_r >= 0 else null, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
    # single threaded, we join cheaply ourselves (cgroup v1 `tasks`);
    # otherwise the monitor puts us in meanwhile (ContainerMonitor.join_cgroup)
    for f in spec.get("cgroup_self") or []:
        with open(f, "w") as fh:
            fh.write("0")
    ns = spec.get("namespaces") or {}
    for kind, flag in (
        ("ipc", libc.CLONE_NEWIPC),
        ("uts", libc.CLONE_NEWUTS),
        ("net", libc.CLONE_NEWNET),
    ):
        if ns.get(kind):
            libc.setns_path(ns[kind], flag)
    libc.unshare(libc.CLONE_NEWNS)
    root = mounts.build_rootfs(spec)
    mounts.pivot(root)
    if spec.get("readonly_rootfs"):
        mounts.remount_root_readonly()
    proc = spec["process"]
    creds = _resolve_creds(proc)
    user = {"uid": creds.uid, "gid": creds.gid, "groups": list(creds.groups)}
    os.write(report_w, b"R" + json.dumps(user).encode()[:3000] + b"\n")
    # start_r -1: StartContainer spawned us and nothing is left to wait for
    if start_r >= 0 and os.read(start_r, 1) != b"S":
        os._exit(1)
    _exec_process(proc, creds, proc["args"])


def _exec_child(
    spec: Spec, init_pid: int, req: Spec, out_w: int, err_w: int, in_r: int = -1, tty: int = -1
) -> None:
    """An exec'd process: stdio from the given fds (-1: /dev/null), or a
    controlling terminal `tty` for all three."""
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    if tty >= 0:
        fcntl.ioctl(tty, termios.TIOCSCTTY, 0)
        for fd in (0, 1, 2):
            os.dup2(tty, fd)
    else:
        os.dup2(in_r if in_r >= 0 else null, 0)
        os.dup2(out_w if out_w >= 0 else null, 1)
        os.dup2(err_w if err_w >= 0 else null, 2)
    for f in spec.get("cgroup_self") or spec.get("cgroup_procs") or []:
        with contextlib.suppress(OSError), open(f, "w") as fh:
            fh.write("0")
    fds = []
    for kind, flag in (
        ("ipc", libc.CLONE_NEWIPC),
        ("uts", libc.CLONE_NEWUTS),
        ("net", libc.CLONE_NEWNET),
        ("mnt", libc.CLONE_NEWNS),
    ):
        fds.append((os.open(f"/proc/{init_pid}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC), flag))
    for fd, flag in fds:
        libc.setns(fd, flag)
        os.close(fd)
    proc = dict(spec["process"])
    creds = _resolve_creds(proc)
    _exec_process(proc, creds, list(req["args"]))


def _container_pty(init_pid: int) -> tuple[int, int]:
    """A pty pair from the container's own devpts instance (so `tty` inside
    names it), opened through /proc/<init>/root; the host's as a fallback."""
    root = f"/proc/{init_pid}/root/dev/pts"
    try:
        master = os.open(f"{root}/ptmx", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return os.openpty()
    try:
        fcntl.ioctl(master, 0x40045431, struct.pack("i", 0))  # TIOCSPTLCK: unlock
        n = struct.unpack("I", fcntl.ioctl(master, 0x80045430, b"\0\0\0\0"))[0]  # TIOCGPTN
        slave = os.open(f"{root}/{n}", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        os.close(master)
        return os.openpty()
    return master, slave


def _set_size(fd: int, width: int, height: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))


def _run_child(target: Any, report_w: int, *args: Any) -> None:
    """Body of a forked child: run `target`; on failure report and _exit."""
    code = 1
    try:
        target(*args)
    except BaseException as exc:
        msg = str(exc) if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
        with contextlib.suppress(OSError):
            os.write(report_w, b"E" + msg.encode()[:3000])
        code = 127 if isinstance(exc, OSError) and exc.errno in (errno.ENOENT, errno.EACCES) else 1
    finally:
        os._exit(code)


# --- container monitor ---------------------------------------------------------


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


class ContainerMonitor:
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
        return open(self.log_path, "ab", buffering=0)

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
            _run_child(
                _container_child,
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

    def serve(self) -> tuple[int, socket.socket]:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        dfd = os.open(self.dir, os.O_DIRECTORY | os.O_RDONLY)
        path = f"/proc/self/fd/{dfd}/monitor.sock"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.dir, "monitor.sock"))
        sock.bind(path)
        os.chmod(os.path.join(self.dir, "monitor.sock"), 0o600)
        sock.listen(16)
        os.close(dfd)
        return sock.fileno(), sock

    def run(self, autostart: bool = False) -> int:
        """Serve until the init exits. `autostart` (StartContainer spawned
        us): let the init exec as soon as it is ready and put the outcome in
        the one report, which spares the runtime a round trip on the control
        socket (and the init a wait for "start")."""
        lfd, sock = self.serve()
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        report: Spec = {"pid": os.getpid(), "init_pid": self.init_pid}
        if autostart:
            self.join_cgroup()
            started = self._start()
            if "error" in started:
                report["start_error"] = started["error"]
            else:
                report.update(started)
            _report(report)
        else:
            _report(report)
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

    # init output -> CRI log
    def _pump(self, fd: int) -> bool:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return False
        except OSError:  # EIO: the pty's last holder closed it
            data = b""
        w = self.writers[fd]
        if not data:
            self._log_write(w.flush())
            del self.writers[fd]
            if fd != self.master:
                os.close(fd)
            return False
        self._log_write(w.feed(data))
        for a in self.attachers.values():
            target = a.err if w.tag == b"stderr" and a.err >= 0 else a.out
            if target >= 0:
                try:
                    os.write(target, data)
                except BlockingIOError:
                    pass  # a slow client loses output rather than stalling the log
                except OSError:
                    a.out = a.err = -1
        return True

    def _log_write(self, data: bytes) -> None:
        if data:
            try:
                self.log.write(data)
            except OSError:
                # the log directory went away; keep the container running
                pass

    def _drain(self) -> None:
        for fd in list(self.writers):
            os.set_blocking(fd, False)
            while fd in self.writers and self._pump(fd):
                pass
            if fd in self.writers:
                self._log_write(self.writers.pop(fd).flush())
                os.close(fd)

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
        _write_json_atomic(
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
            line, fds, _, _ = socket.recv_fds(conn, 65536, 3)
            while line and not line.endswith(b"\n"):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                line += chunk
            req = json.loads(line or b"{}")
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
                    _set_size(self.master, int(req["width"]), int(req["height"]))
                self._reply(conn, {"ok": True})
                return
            if op == "resize":
                job = self.streams.get(int(req.get("pid", 0)))
                if job is not None and job.master >= 0:
                    _set_size(job.master, int(req["width"]), int(req["height"]))
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

    # exec for the streaming server
    def _exec_stream(self, conn: socket.socket, req: Spec, fds: list[int]) -> None:
        names = list(req.get("fds") or [])
        got = dict(zip(names, fds, strict=False))
        tty = bool(req.get("tty"))
        rep_r, rep_w = os.pipe2(os.O_CLOEXEC)
        master = slave = -1
        if tty:
            master, slave = _container_pty(self.init_pid)
            if req.get("width"):
                _set_size(master, int(req["width"]), int(req["height"]))
        pid = os.fork()
        if pid == 0:
            os.close(rep_r)
            if master >= 0:
                os.close(master)
            _run_child(
                _exec_child, rep_w, self.spec, self.init_pid, req,
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

    def _reply(self, conn: socket.socket, obj: Any) -> None:
        try:
            conn.sendall((json.dumps(obj) + "\n").encode())
        except OSError:
            pass
        finally:
            conn.close()

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

    def _exec(self, conn: socket.socket, req: Spec) -> None:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        rep_r, rep_w = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:
            os.close(out_r)
            os.close(err_r)
            os.close(rep_r)
            _run_child(_exec_child, rep_w, self.spec, self.init_pid, req, out_w, err_w)
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


def run_container(spec: Spec, fork: bool = True, autostart: bool = False) -> int:
    _detach(fork)
    os.umask(0o022)
    mon = ContainerMonitor(spec)
    mon.start_at_once = autostart and bool(spec.get("cgroup_self"))
    try:
        mon.setup()
    except Exception as exc:
        _report(
            {
                "error": str(exc)
                if isinstance(exc, OSError | RuntimeError)
                else f"{type(exc).__name__}: {exc}"
            }
        )
        return 1
    return mon.run(autostart)


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


def run_zygote(listen_fd: int) -> int:
    """Fork monitors on request, so that they share this process's pages
    (after gc.freeze, the collector does not touch them): a monitor then
    costs little more than its own heap. One JSON line per connection
    (`{"mode", "spec"}`); the forked monitor answers on the connection. Dies
    with the runtime that started it (PDEATHSIG)."""
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
    while True:
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
                    _report({"error": f"{type(exc).__name__}: {exc}"})
            finally:
                os._exit(code)
        conn.close()


def main(argv: list[str], fork: bool = True) -> int:
    if argv[0] == "zygote":
        return run_zygote(int(argv[1]))
    mode, spec_path = argv[0], argv[1]
    with open(spec_path) as f:
        spec = json.load(f)
    err_log = spec.get("monitor_log")
    if err_log:
        fd = os.open(err_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
    if mode == "sandbox":
        libc.set_name("skiff-sandbox")
        return run_sandbox(spec, fork)
    libc.set_name("skiff-monitor")
    return run_container(spec, fork, autostart=mode == "container-start")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
