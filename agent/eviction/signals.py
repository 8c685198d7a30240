"""The eviction signals, observed as the kubelet observes them.

memory.available: the node's memory capacity less the working set of the
root memory cgroup (usage less inactive file pages, cgroup v1; on v2 the
root has no usage file and MemAvailable stands in). allocatableMemory.available:
the node's allocatable memory less the working set of the pods' cgroup.
nodefs.*: statfs of the agent's root dir; imagefs.*: statfs of the mount
point the runtime names in ImageFsInfo; pid.available: pid_max less the
processes. Each pod's usage (working set, processes, log bytes) comes from
its own cgroup and log directory. A memory cgroup threshold notification
(cgroup v1 `cgroup.event_control` with an eventfd) wakes the eviction
manager the moment usage crosses a threshold instead of at its next poll.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from agent.pod_cgroups import cgroup_mounts

log = logging.getLogger("skiff.agent.eviction")

REARM_SLACK = 16 << 20  # bytes the threshold may drift before it is set again


@dataclass(frozen=True)
class Observation:
    available: int
    capacity: int


def memory_hierarchy(mounts: Iterable[Path] | None = None) -> tuple[Path, bool] | None:
    """The memory controller's mount and whether it is cgroup v2."""
    found = list(cgroup_mounts() if mounts is None else mounts)
    for m in found:
        if m.name == "memory" or "memory" in m.name.split(","):
            return m, False
    for m in found:
        if (m / "cgroup.controllers").exists():
            with contextlib.suppress(OSError):
                if "memory" in (m / "cgroup.controllers").read_text().split():
                    return m, True
    return None


def _stat(path: Path) -> dict[str, int]:
    out = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            k, _, v = line.partition(" ")
            with contextlib.suppress(ValueError):
                out[k] = int(v)
    return out


def working_set(cgroup: Path, v2: bool) -> int | None:
    """Usage less inactive file pages (the kubelet's working set), or None."""
    try:
        if v2:
            usage = int((cgroup / "memory.current").read_text())
            inactive = _stat(cgroup / "memory.stat").get("inactive_file", 0)
        else:
            usage = int((cgroup / "memory.usage_in_bytes").read_text())
            inactive = _stat(cgroup / "memory.stat").get("total_inactive_file", 0)
    except (OSError, ValueError):
        return None
    return max(0, usage - inactive)


def inactive_file(cgroup: Path, v2: bool) -> int:
    return _stat(cgroup / "memory.stat").get("inactive_file" if v2 else "total_inactive_file", 0)


def meminfo() -> dict[str, int]:
    out = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            k, _, v = line.partition(":")
            parts = v.split()
            with contextlib.suppress(ValueError, IndexError):
                out[k] = int(parts[0]) * (1024 if len(parts) > 1 else 1)
    return out


def node_memory() -> Observation:
    info = meminfo()
    total = info.get("MemTotal", 0)
    hier = memory_hierarchy()
    ws = working_set(hier[0], hier[1]) if hier and not hier[1] else None
    if ws is None:
        return Observation(info.get("MemAvailable", 0), total)
    return Observation(total - ws, total)


def cgroup_memory(rel: str, capacity: int) -> Observation | None:
    """`capacity` less the working set of cgroup `rel` (e.g. the pods' root)."""
    hier = memory_hierarchy()
    if hier is None:
        return None
    ws = working_set(hier[0] / rel.strip("/"), hier[1])
    return None if ws is None else Observation(capacity - ws, capacity)


def filesystem(path: str) -> tuple[Observation, Observation]:
    """(bytes, inodes) of the filesystem holding `path`."""
    while not os.path.exists(path):
        path = os.path.dirname(path) or "/"
    st = os.statvfs(path)
    return (
        Observation(st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize),
        Observation(st.f_favail, st.f_files),
    )


def pids() -> Observation:
    try:
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    except (OSError, ValueError):
        pid_max = 32768
    used = sum(1 for e in os.scandir("/proc") if e.name.isdigit())
    return Observation(pid_max - used, pid_max)


def cgroup_processes(rel: str) -> int:
    """Processes in cgroup `rel` and below (any hierarchy that has it)."""
    for m in cgroup_mounts():
        top = m / rel.strip("/")
        if top.is_dir():
            n = 0
            for dirpath, _d, _f in os.walk(top):
                with contextlib.suppress(OSError):
                    n += len((Path(dirpath) / "cgroup.procs").read_text().split())
            return n
    return 0


def dir_bytes(path: Path) -> int:
    total = 0
    for dirpath, _d, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, f)).st_blocks * 512
    return total


class ThresholdNotifier:
    """cgroup v1 memory threshold: `wake()` runs when the usage of `cgroup`
    crosses `usage` bytes. Nothing on cgroup v2 (no such interface)."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self.wake = wake
        self._efd = -1
        self._ufd = -1
        self._armed: tuple[Path, int] | None = None
        self._stop = False
        self._thread: threading.Thread | None = None

    def arm(self, cgroup: Path, usage: int) -> bool:
        """(Re)arm at `usage` bytes; False where the kernel has no such notification."""
        armed = self._armed
        if armed is not None and armed[0] == cgroup and abs(armed[1] - usage) < REARM_SLACK:
            return True  # inactive file pages move all the time: not worth a re-arm
        control = cgroup / "cgroup.event_control"
        if not control.exists():
            return False
        self.disarm()
        try:
            self._efd = os.eventfd(0, os.EFD_CLOEXEC)
            self._ufd = os.open(cgroup / "memory.usage_in_bytes", os.O_RDONLY | os.O_CLOEXEC)
            control.write_text(f"{self._efd} {self._ufd} {usage}")
        except OSError as err:
            log.info("no memory threshold notification on %s: %s", cgroup, err)
            self.disarm()
            return False
        self._armed = (cgroup, usage)
        self._stop = False
        efd = self._efd
        self._thread = threading.Thread(
            target=self._wait, args=(efd,), name="memcg-threshold", daemon=True
        )
        self._thread.start()
        return True

    def _wait(self, efd: int) -> None:
        while True:
            try:
                os.eventfd_read(efd)
            except OSError:
                return
            if self._stop or efd != self._efd:
                return
            self.wake()

    def disarm(self) -> None:
        self._stop = True
        efd, ufd = self._efd, self._ufd
        self._efd = self._ufd = -1
        self._armed = None
        if efd >= 0:
            with contextlib.suppress(OSError):
                os.eventfd_write(efd, 1)  # ends the waiting thread
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        for fd in (efd, ufd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
