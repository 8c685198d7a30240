"""Sandbox mode: the holder of a pod's namespaces. Unshares the pod's
network, IPC and UTS namespaces (and optionally a PID namespace with a child
as its PID 1), sets the hostname and sysctls, brings `lo` up, reports its
pids, then waits for SIGTERM (or execs the tiny pause binary). The runtime
pins the namespaces by bind mounts.

Standard library plus `runtime.linux` only.
"""

from __future__ import annotations

import contextlib
import os
import signal

from machinery import libc
from runtime.linux import netdev
from runtime.process.monitor.plumbing import Spec, detach, report, reset_signals, write_line


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
    reset_signals()
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
    reset_signals()
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
    detach(fork)
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
        write_line({"pid": os.getpid(), "pid1": pid1, "early": True})
        for f in [] if joined else spec.get("cgroup_procs") or []:
            # only the process that stays (pid1 when there is one)
            with open(f, "w") as fh:
                fh.write(str(pid1 or os.getpid()))
    except Exception as exc:  # reported to the runtime, which fails the RPC
        report({"error": f"{type(exc).__name__}: {exc}"})
        return 1
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD, signal.SIGTERM, signal.SIGINT])
    report({"pid": os.getpid(), "pid1": pid1})
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
