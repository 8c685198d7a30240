"""The processes a container monitor forks: the container init (joins the
pod's namespaces and the cgroup, builds the rootfs in its own mount
namespace, pivots, waits for "start", then switches credentials,
capabilities and seccomp and execs) and exec'd processes (enter the init's
namespaces, then the same). Runs only in forked children of the monitor.

Standard library plus `runtime.linux` only.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import fcntl
import json
import os
import struct
import termios
from typing import Any

from machinery import libc
from runtime.linux import caps, mounts, seccomp, users
from runtime.process.monitor.plumbing import Spec, reset_signals


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
    if proc.get("apparmor"):
        # the profile the next exec runs under (as runc applies it)
        with open("/proc/self/attr/apparmor/exec", "w") as f:
            f.write(f"exec {proc['apparmor']}")
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
    reset_signals()
    try:
        os.execvpe(args[0], args, env)
    except OSError as exc:
        raise OSError(exc.errno, f"exec {args[0]!r}: {exc.strerror}") from None


def _new_session(in_r: int, out_w: int, err_w: int, tty: int) -> None:
    """A session of our own, with stdio from the given fds (-1: /dev/null) or,
    when `tty` is given, that terminal as the controlling one for all three."""
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


def container_child(
    spec: Spec, out_w: int, err_w: int, report_w: int, start_r: int, in_r: int, tty: int
) -> None:
    _new_session(in_r, out_w, err_w, tty)
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


def exec_child(
    spec: Spec, init_pid: int, req: Spec, out_w: int, err_w: int, in_r: int = -1, tty: int = -1
) -> None:
    """An exec'd process: stdio from the given fds (-1: /dev/null), or a
    controlling terminal `tty` for all three."""
    _new_session(in_r, out_w, err_w, tty)
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


def container_pty(init_pid: int) -> tuple[int, int]:
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


def set_size(fd: int, width: int, height: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))


def run_child(target: Any, report_w: int, *args: Any) -> None:
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
