"""The runtime's side of the monitor: start one (with subprocess, which
execs at once, so no Python runs in a forked copy of the gRPC server), read
its one-line JSON report, and talk to its control socket.

This module never forks by hand, never enters namespaces, and never blocks
longer than the timeout it is given.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from machinery.atomicfile import write_atomic
from runtime.process.zygote import Zygote

# the monitor package, run as a script (its __main__.py) where no zygote runs
MONITOR = Path(__file__).with_name("monitor")


class MonitorError(Exception):
    """The monitor (or the container init it forked) reported a failure."""


def dial(zygote: Zygote, netns: str, port: int, timeout: float = 15) -> socket.socket:
    """A TCP connection to localhost:`port` inside the network namespace
    pinned at `netns`, dialled by a zygote child (never by us)."""
    try:
        with zygote.connect({"mode": "dial", "netns": netns, "port": port}, timeout) as s:
            data, fds, _, _ = socket.recv_fds(s, 65536, 1)
    except OSError as exc:
        raise MonitorError(f"monitor zygote: {exc}") from None
    if not fds:
        reply = json.loads(data or b"{}")
        raise MonitorError(str(reply.get("error") or "dial failed"))
    return socket.socket(fileno=fds[0])


class Pending:
    """A monitor that reports in two steps (the sandbox monitor): `first()`
    is its early report (pids, namespaces made), `finish()` waits for the
    rest of its setup and returns its final report. Lets the runtime pin
    namespaces and run CNI while the monitor still joins its cgroup."""

    def __init__(self, stream: Any, log_path: Path, proc: subprocess.Popen[bytes] | None) -> None:
        self.stream = stream  # a socket's makefile("rb") or a pipe
        self.log_path = log_path
        self.proc = proc
        self.closers: list[Any] = []

    def first(self) -> dict[str, Any]:
        return _parse_report(self._readline(), self.log_path)

    def finish(self) -> dict[str, Any]:
        try:
            out = b""
            while line := self._readline():
                out += line
            return _parse_report(out, self.log_path)
        finally:
            self.close()

    def _readline(self) -> bytes:
        try:
            line: bytes = self.stream.readline()
        except OSError as exc:  # socket.timeout included
            raise MonitorError(f"monitor did not report: {exc}") from None
        return line

    def close(self) -> None:
        for c in [self.stream, *self.closers]:
            with contextlib.suppress(OSError):
                c.close()
        self.closers = []
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
            self.proc = None


def start(
    mode: str,
    spec: dict[str, Any],
    spec_path: Path,
    log_path: Path,
    timeout: float = 60,
    zygote: Zygote | None = None,
) -> Pending:
    """Like `spawn`, for a monitor that reports in two steps (see Pending)."""
    _write_spec(spec, spec_path)
    if zygote is not None and zygote.usable():
        try:
            sock = zygote.connect({"mode": mode, "spec": str(spec_path)}, timeout)
        except OSError as exc:
            raise MonitorError(f"monitor zygote: {exc}") from None
        pending = Pending(sock.makefile("rb"), log_path, None)
        pending.closers.append(sock)
        return pending
    proc = _start_monitor(mode, spec_path, log_path)
    assert proc.stdout is not None
    return Pending(proc.stdout, log_path, proc)


def _start_monitor(mode: str, spec_path: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """A monitor started directly (no zygote): its report on stdout, its
    errors appended to the log, in a session of its own."""
    with open(log_path, "ab") as err:
        return subprocess.Popen(
            [sys.executable, "-S", "-E", "-B", str(MONITOR), mode, str(spec_path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            close_fds=True,
            start_new_session=True,
        )


def _write_spec(spec: dict[str, Any], spec_path: Path) -> None:
    write_atomic(spec_path, json.dumps(spec), durable=False)  # made again by each spawn


def spawn(
    mode: str,
    spec: dict[str, Any] | None,
    spec_path: Path,
    log_path: Path,
    timeout: float = 60,
    zygote: Zygote | None = None,
) -> dict[str, Any]:
    """Write `spec`, start a monitor in `mode` (forked by `zygote` when it
    runs), and return its report (pids). Raises MonitorError with the
    monitor's message on failure. `spec` None: `spec_path` is written."""
    if spec is not None:
        _write_spec(spec, spec_path)
    if zygote is not None and zygote.usable():
        try:
            with zygote.connect({"mode": mode, "spec": str(spec_path)}, timeout) as s:
                out = b""
                while chunk := s.recv(65536):
                    out += chunk
        except OSError as exc:
            raise MonitorError(f"monitor zygote: {exc}") from None
        return _parse_report(out, log_path)
    proc = _start_monitor(mode, spec_path, log_path)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise MonitorError(f"monitor did not report within {timeout}s") from None
    return _parse_report(out, log_path)


def _parse_report(out: bytes, log_path: Path) -> dict[str, Any]:
    line = out.decode(errors="replace").strip().splitlines()
    if not line:
        raise MonitorError(f"monitor exited without a report: {tail(log_path)}")
    report: dict[str, Any] = json.loads(line[-1])
    if "error" in report:
        raise MonitorError(report["error"])
    return report


def tail(path: Path, n: int = 2000) -> str:
    try:
        return path.read_bytes()[-n:].decode(errors="replace").strip()
    except OSError:
        return ""


def call(state_dir: Path, request: dict[str, Any], timeout: float = 10) -> dict[str, Any]:
    """One JSON request/response on the monitor's control socket."""
    dfd = os.open(state_dir, os.O_DIRECTORY | os.O_RDONLY | os.O_CLOEXEC)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(f"/proc/self/fd/{dfd}/monitor.sock")
            s.sendall((json.dumps(request) + "\n").encode())
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                buf += chunk
    finally:
        os.close(dfd)
    if not buf:
        raise MonitorError("monitor closed the connection without answering")
    reply: dict[str, Any] = json.loads(buf)
    return reply


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    stdout: bytes
    stderr: bytes
    timed_out: bool
    error: str


def exec_sync(state_dir: Path, args: list[str], timeout: float) -> ExecResult:
    sock_timeout = (timeout + 10) if timeout > 0 else None
    reply = call(
        state_dir, {"op": "exec", "args": args, "timeout": timeout}, timeout=sock_timeout or 86400
    )
    if "error" in reply:
        raise MonitorError(reply["error"])
    return ExecResult(
        int(reply["exit_code"]),
        base64.b64decode(reply["stdout"]),
        base64.b64decode(reply["stderr"]),
        bool(reply.get("timed_out")),
        str(reply.get("exec_error", "")),
    )


def start_time(pid: int) -> int:
    """The process start time (clock ticks since boot), 0 if it is gone:
    with the pid it identifies a process across pid reuse."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return 0
    return int(data[data.rindex(")") + 2 :].split()[19])


def alive(pid: int, started: int) -> bool:
    if pid <= 0:
        return False
    st = start_time(pid)
    if st == 0:
        return False
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as f:
        state = f.read().rsplit(")", 1)[1].split()[0]
        if state == "Z":
            return False
    return started == 0 or st == started
