"""The host as the CRI handlers see it: one small `Host` protocol for every
step that leaves something on the machine (directories and files, mounts,
namespace pins, cgroups, monitor processes, signals), so the handlers' undo
paths can be driven step by step against a fake (tests/fakes/fake_host.py),
as containerd's CRI plugin does with its `OS` interface.

`LinuxHost` is the real thing and only delegates to `runtime.linux` and
`runtime.process`. Nothing here knows what a sandbox or a container is, and
nothing here forks or enters a namespace (the monitor does).
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import shutil
import signal
import socket
from pathlib import Path
from typing import Any, Protocol

from machinery import libc
from machinery.atomicfile import write_atomic
from runtime import errors
from runtime.linux import cgroups, namespaces
from runtime.process import spawn
from runtime.process.zygote import Zygote


class PendingMonitor(Protocol):
    """A monitor that reports in two steps (see runtime.process.spawn.Pending)."""

    def first(self) -> dict[str, Any]: ...
    def finish(self) -> dict[str, Any]: ...
    def close(self) -> None: ...


class Host(Protocol):
    # --- files -----------------------------------------------------------------
    def make_dir(self, path: Path, mode: int = 0o755) -> None:
        """Create `path` and missing parents; it must not exist yet."""
        ...

    def ensure_dir(self, path: Path, mode: int = 0o755) -> bool:
        """Create `path` if missing; True if this call created it."""
        ...

    def write_file(self, path: Path, data: str, mode: int = 0o644) -> None:
        """Replace `path` atomically with `data`."""
        ...

    def remove_tree(self, path: Path) -> None:
        """Remove `path` and everything under it; missing is fine."""
        ...

    # --- mounts and namespaces ----------------------------------------------------
    def mount_tmpfs(self, target: Path, flags: int, options: str) -> None: ...
    def unmount(self, target: Path) -> None:
        """Detach the mount on `target`; nothing mounted there is fine."""
        ...

    def pin_namespace(self, pid: int, kind: str, target: Path) -> None: ...
    def unpin_namespace(self, target: Path) -> None: ...

    # --- cgroups ----------------------------------------------------------------
    def cgroup(self, rel: str) -> cgroups.Cgroup: ...

    # --- processes ----------------------------------------------------------------
    def start_monitor(
        self, mode: str, spec: dict[str, Any], spec_path: Path, log_path: Path
    ) -> PendingMonitor: ...
    def spawn_monitor(self, mode: str, spec_path: Path, log_path: Path) -> dict[str, Any]:
        """Start a monitor from the spec at `spec_path`; its report.
        Raises spawn.MonitorError."""
        ...

    def call_monitor(
        self, state_dir: Path, request: dict[str, Any], timeout: float
    ) -> dict[str, Any]: ...
    def dial(self, netns: str, port: int) -> socket.socket:
        """A TCP connection to localhost:`port` inside `netns`."""
        ...

    def kill(self, pid: int, sig: int) -> None:
        """Signal `pid`; a process already gone is fine."""
        ...

    def alive(self, pid: int, started: int) -> bool: ...
    def start_time(self, pid: int) -> int: ...
    def wait_exit(self, pid: int, timeout: float) -> bool: ...


class LinuxHost:
    """The real host. `zygote`, when set, forks the monitors (and starts
    when one is asked for)."""

    def __init__(self, cgroup_root: Path) -> None:
        self.cgroup_root = cgroup_root
        self.zygote: Zygote | None = None

    def make_dir(self, path: Path, mode: int = 0o755) -> None:
        path.mkdir(mode=mode, parents=True)

    def ensure_dir(self, path: Path, mode: int = 0o755) -> bool:
        if path.is_dir():
            return False
        try:
            path.mkdir(mode=mode, parents=True)
        except FileExistsError:
            return False
        return True

    def write_file(self, path: Path, data: str, mode: int = 0o644) -> None:
        write_atomic(path, data, durable=False, mode=mode)  # a pod's files: made again

    def remove_tree(self, path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def mount_tmpfs(self, target: Path, flags: int, options: str) -> None:
        libc.mount("tmpfs", str(target), "tmpfs", flags, options)

    def unmount(self, target: Path) -> None:
        try:
            libc.umount2(str(target), libc.MNT_DETACH)
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOENT):
                raise

    def pin_namespace(self, pid: int, kind: str, target: Path) -> None:
        namespaces.pin(pid, kind, target)

    def unpin_namespace(self, target: Path) -> None:
        namespaces.unpin(target)

    def cgroup(self, rel: str) -> cgroups.Cgroup:
        return cgroups.open_cgroup(rel, self.cgroup_root)

    def _zygote(self) -> Zygote | None:
        return self.zygote if self.zygote is not None and self.zygote.usable() else None

    def start_monitor(
        self, mode: str, spec: dict[str, Any], spec_path: Path, log_path: Path
    ) -> PendingMonitor:
        return spawn.start(mode, spec, spec_path, log_path, zygote=self._zygote())

    def spawn_monitor(self, mode: str, spec_path: Path, log_path: Path) -> dict[str, Any]:
        return spawn.spawn(mode, None, spec_path, log_path, zygote=self._zygote())

    def call_monitor(
        self, state_dir: Path, request: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        return spawn.call(state_dir, request, timeout=timeout)

    def dial(self, netns: str, port: int) -> socket.socket:
        z = self._zygote()
        if z is None:
            raise errors.Unavailable("the monitor zygote is not running")
        return spawn.dial(z, netns, port)

    def kill(self, pid: int, sig: int) -> None:
        if pid <= 0:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)

    def alive(self, pid: int, started: int) -> bool:
        return spawn.alive(pid, started)

    def start_time(self, pid: int) -> int:
        return spawn.start_time(pid)

    def wait_exit(self, pid: int, timeout: float) -> bool:
        """Wait (on a pidfd) until `pid` has exited; True if it did in time."""
        if pid <= 0:
            return True
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return True
        try:
            p = select.poll()
            p.register(fd, select.POLLIN)
            return bool(p.poll(int(timeout * 1000)))
        finally:
            os.close(fd)


SIGKILL = int(signal.SIGKILL)
