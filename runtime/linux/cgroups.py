"""cgroups v1 and v2 behind one interface: create a cgroup, put a pid in it,
apply `Resources`, read `Stats`, count OOM kills, kill everything in it, and
remove it.

`open_cgroup(relpath)` picks the implementation from the shape of the
hierarchy root (a `cgroup.controllers` file means unified v2). Both take the
root as a parameter so tests can point them at a temporary directory shaped
like cgroupfs. This module never decides which cgroup a pod gets (the caller
does), and never sleeps waiting for processes: it waits on pidfds.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("cpu", "cpuacct", "memory", "pids", "cpuset", "hugetlb", "devices")
# joined by every container on v1; cpuset and hugetlb only when asked for,
# because each v1 hierarchy a process joins costs a write to cgroup.procs
V1_BASE = ("cpu", "cpuacct", "memory", "pids", "devices")

# What every container may use (runc's default allow list): mknod of any
# node, but only these devices opened.
DEFAULT_DEVICE_RULES = [
    "c *:* m", "b *:* m",
    "c 1:3 rwm", "c 1:5 rwm", "c 1:7 rwm", "c 1:8 rwm", "c 1:9 rwm",  # null zero full random urandom
    "c 5:0 rwm", "c 5:1 rwm", "c 5:2 rwm", "c 136:* rwm",  # tty console ptmx pts
    "c 10:200 rwm",  # tun
]  # fmt: skip
V2_CONTROLLERS = ("cpu", "memory", "pids", "cpuset", "io", "hugetlb")


@dataclass(frozen=True)
class Resources:
    """What CRI's LinuxContainerResources asks, in kernel-neutral units.
    Zero or None means "leave unlimited / default"."""

    cpu_shares: int = 0
    cpu_quota: int = 0
    cpu_period: int = 0
    cpuset_cpus: str = ""
    cpuset_mems: str = ""
    memory_limit: int = 0
    pids_limit: int = 0
    hugepage_limits: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Stats:
    timestamp_ns: int
    cpu_usage_ns: int
    memory_usage: int
    memory_working_set: int
    memory_rss: int
    page_faults: int
    major_page_faults: int


class Cgroup(Protocol):
    version: int

    @property
    def procs_files(self) -> list[str]: ...
    @property
    def self_join_files(self) -> list[str]:
        """Files a single-threaded process writes "0" into to join the
        cgroup cheaply ([] where there is no such way)."""
        ...

    def create(self) -> None: ...
    def add(self, pid: int) -> None: ...
    def apply(self, res: Resources) -> None: ...
    def stats(self) -> Stats: ...
    def oom_kills(self) -> int: ...
    def pids(self) -> list[int]: ...
    def exists(self) -> bool: ...
    def kill_all(self, timeout: float = 5.0) -> None: ...
    def destroy(self) -> None: ...
    def allow_devices(self, rules: list[str]) -> None: ...


def _read(path: Path, default: str = "") -> str:
    try:
        return path.read_text().strip()
    except (FileNotFoundError, OSError):
        return default


def _read_int(path: Path) -> int:
    text = _read(path, "0")
    try:
        return int(text)
    except ValueError:
        return 0


def _kv(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in _read(path).splitlines():
        parts = line.split()
        if len(parts) == 2:
            with contextlib.suppress(ValueError):
                out[parts[0]] = int(parts[1])
    return out


def _write(path: Path, value: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(value)
    except OSError as exc:
        raise OSError(exc.errno, f"write {value!r} to {path}: {exc.strerror}") from None


def wait_pids_exit(pids: list[int], timeout: float) -> bool:
    """Wait until every pid has exited (via pidfds); True if all did."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            left = max(0.0, deadline - time.monotonic())
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            if not poller.poll(int(left * 1000)):
                return False
        finally:
            os.close(fd)
    return True


def _rmdir_retry(path: Path, timeout: float = 2.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                raise
        # the kernel releases an emptied cgroup asynchronously after the last
        # task is reaped; this is a bounded retry on EBUSY, not a wait on work
        time.sleep(0.005)


def _mkdirs_cpuset_v1(root: Path, rel: Path) -> None:
    """mkdir -p, copying cpuset.cpus/mems down from the parent at each level
    (a fresh v1 cpuset cgroup is empty and refuses tasks)."""
    cur = root
    for part in rel.parts:
        nxt = cur / part
        if not nxt.is_dir():
            with contextlib.suppress(FileExistsError):
                nxt.mkdir()
        for f in ("cpuset.cpus", "cpuset.mems"):
            if not _read(nxt / f):
                _write(nxt / f, _read(cur / f))
        cur = nxt


class CgroupV1:
    """One directory per mounted controller, all at the same relative path."""

    version = 1

    def __init__(self, relpath: str, root: Path = CGROUP_ROOT) -> None:
        self.rel = Path(relpath.strip("/"))
        self.root = root
        self.dirs: dict[str, Path] = {}
        for ctrl in V1_CONTROLLERS:
            base = root / ctrl
            if base.is_dir():
                self.dirs[ctrl] = base / self.rel

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs.values() if d.is_dir()]

    @property
    def self_join_files(self) -> list[str]:
        # v1 `tasks`: a single-threaded process that writes "0" moves itself
        # without the global threadgroup lock, so without the RCU grace
        # period a `cgroup.procs` write waits for (0.5 ms against ~12 ms here)
        return [str(d / "tasks") for d in self.dirs.values() if d.is_dir()]

    def create(self) -> None:
        for ctrl in V1_BASE:
            if ctrl in self.dirs:
                self._make(ctrl)

    def _make(self, ctrl: str) -> None:
        if ctrl == "cpuset":
            _mkdirs_cpuset_v1(self.root / ctrl, self.rel)
        else:
            self.dirs[ctrl].mkdir(parents=True, exist_ok=True)

    def _ensure_extra(self, ctrl: str) -> Path | None:
        """Create a cpuset/hugetlb cgroup on first use and move the
        processes already in the others into it."""
        d = self.dirs.get(ctrl)
        if d is None or d.is_dir():
            return d
        members = self.pids()
        self._make(ctrl)
        for pid in members:
            with contextlib.suppress(OSError):
                _write(d / "cgroup.procs", str(pid))
        return d

    def exists(self) -> bool:
        return any(d.is_dir() for d in self.dirs.values())

    def allow_devices(self, rules: list[str]) -> None:
        """Deny every device, then allow `rules` ("c 1:3 rwm" ...)."""
        d = self.dirs.get("devices")
        if d is None or not d.is_dir():
            return
        _write(d / "devices.deny", "a")
        for rule in rules:
            _write(d / "devices.allow", rule)

    def add(self, pid: int) -> None:
        for f in self.procs_files:
            _write(Path(f), str(pid))

    def apply(self, res: Resources) -> None:
        if res.cpuset_cpus or res.cpuset_mems:
            self._ensure_extra("cpuset")
        if res.hugepage_limits:
            self._ensure_extra("hugetlb")
        cpu = self.dirs.get("cpu")
        if cpu is not None:
            if res.cpu_shares:
                _write(cpu / "cpu.shares", str(res.cpu_shares))
            if res.cpu_period:
                _write(cpu / "cpu.cfs_period_us", str(res.cpu_period))
            if res.cpu_quota:
                _write(cpu / "cpu.cfs_quota_us", str(res.cpu_quota))
        mem = self.dirs.get("memory")
        if mem is not None and res.memory_limit:
            _write(mem / "memory.limit_in_bytes", str(res.memory_limit))
        pids = self.dirs.get("pids")
        if pids is not None and res.pids_limit:
            _write(pids / "pids.max", str(res.pids_limit))
        cs = self.dirs.get("cpuset")
        if cs is not None:
            if res.cpuset_cpus:
                _write(cs / "cpuset.cpus", res.cpuset_cpus)
            if res.cpuset_mems:
                _write(cs / "cpuset.mems", res.cpuset_mems)
        hug = self.dirs.get("hugetlb")
        if hug is not None:
            for size, limit in res.hugepage_limits.items():
                f = hug / f"hugetlb.{size}.limit_in_bytes"
                if f.exists():
                    _write(f, str(limit))

    def stats(self) -> Stats:
        now = time.time_ns()
        cpu_ns = 0
        acct = self.dirs.get("cpuacct")
        if acct is not None:
            cpu_ns = _read_int(acct / "cpuacct.usage")
        usage = rss = ws = pgf = pgmaj = 0
        mem = self.dirs.get("memory")
        if mem is not None:
            usage = _read_int(mem / "memory.usage_in_bytes")
            st = _kv(mem / "memory.stat")
            rss = st.get("total_rss", st.get("rss", 0))
            inactive = st.get("total_inactive_file", st.get("inactive_file", 0))
            ws = max(0, usage - inactive)
            pgf = st.get("total_pgfault", 0)
            pgmaj = st.get("total_pgmajfault", 0)
        return Stats(now, cpu_ns, usage, ws, rss, pgf, pgmaj)

    def oom_kills(self) -> int:
        mem = self.dirs.get("memory")
        if mem is None:
            return 0
        return _kv(mem / "memory.oom_control").get("oom_kill", 0)

    def pids(self) -> list[int]:
        seen: set[int] = set()
        for d in self.dirs.values():
            for tok in _read(d / "cgroup.procs").split():
                seen.add(int(tok))
        return sorted(seen)

    def kill_all(self, timeout: float = 5.0) -> None:
        _kill_pids(self.pids, timeout)

    def destroy(self) -> None:
        self.kill_all()
        for d in self.dirs.values():
            if d.is_dir():
                for sub in sorted(
                    (p for p in d.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)
                ):
                    _rmdir_retry(sub)
                _rmdir_retry(d)


def _kill_pids(list_pids: object, timeout: float) -> None:
    assert callable(list_pids)
    for _ in range(10):
        pids: list[int] = list_pids()
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_pids_exit(pids, timeout)


class CgroupV2:
    """One directory in the unified hierarchy; controllers are enabled in
    every ancestor's cgroup.subtree_control on create."""

    version = 2

    def __init__(self, relpath: str, root: Path = CGROUP_ROOT) -> None:
        self.rel = Path(relpath.strip("/"))
        self.root = root
        self.dir = root / self.rel

    @property
    def procs_files(self) -> list[str]:
        return [str(self.dir / "cgroup.procs")]

    @property
    def self_join_files(self) -> list[str]:
        return []  # no cheaper way than cgroup.procs in the unified hierarchy

    def create(self) -> None:
        cur = self.root
        for part in self.rel.parts:
            avail = _read(cur / "cgroup.controllers").split()
            enabled = _read(cur / "cgroup.subtree_control").split()
            want = [c for c in V2_CONTROLLERS if c in avail and c not in enabled]
            if want:
                with contextlib.suppress(OSError):
                    _write(cur / "cgroup.subtree_control", " ".join("+" + c for c in want))
            cur = cur / part
            with contextlib.suppress(FileExistsError):
                cur.mkdir()

    def exists(self) -> bool:
        return self.dir.is_dir()

    def allow_devices(self, rules: list[str]) -> None:
        """Deny every device, then allow `rules` ("c 1:3 rwm" ...): cgroup v2
        has no devices files, so this attaches an eBPF device program built
        from the rules, replacing the one a previous call attached. Raises
        OSError naming the cgroup (with the verifier's log if the kernel
        refused the program)."""
        from runtime.linux import devices_bpf

        devices_bpf.set_device_rules(self.dir, rules)

    def add(self, pid: int) -> None:
        _write(self.dir / "cgroup.procs", str(pid))

    def apply(self, res: Resources) -> None:
        d = self.dir
        if res.cpu_shares:
            _write(d / "cpu.weight", str(shares_to_weight(res.cpu_shares)))
        if res.cpu_quota or res.cpu_period:
            period = res.cpu_period or 100000
            quota = str(res.cpu_quota) if res.cpu_quota > 0 else "max"
            _write(d / "cpu.max", f"{quota} {period}")
        if res.memory_limit:
            _write(d / "memory.max", str(res.memory_limit))
        if res.pids_limit:
            _write(d / "pids.max", str(res.pids_limit))
        if res.cpuset_cpus:
            _write(d / "cpuset.cpus", res.cpuset_cpus)
        if res.cpuset_mems:
            _write(d / "cpuset.mems", res.cpuset_mems)
        for size, limit in res.hugepage_limits.items():
            f = d / f"hugetlb.{size}.max"
            if f.exists():
                _write(f, str(limit))

    def stats(self) -> Stats:
        now = time.time_ns()
        cpu = _kv(self.dir / "cpu.stat")
        usage = _read_int(self.dir / "memory.current")
        st = _kv(self.dir / "memory.stat")
        ws = max(0, usage - st.get("inactive_file", 0))
        return Stats(
            now,
            cpu.get("usage_usec", 0) * 1000,
            usage,
            ws,
            st.get("anon", 0),
            st.get("pgfault", 0),
            st.get("pgmajfault", 0),
        )

    def oom_kills(self) -> int:
        return _kv(self.dir / "memory.events").get("oom_kill", 0)

    def pids(self) -> list[int]:
        out: list[int] = []
        if not self.dir.is_dir():
            return out
        for sub in [self.dir, *(p for p in self.dir.rglob("*") if p.is_dir())]:
            out.extend(int(t) for t in _read(sub / "cgroup.procs").split())
        return sorted(set(out))

    def kill_all(self, timeout: float = 5.0) -> None:
        kill = self.dir / "cgroup.kill"
        if kill.exists():
            pids = self.pids()
            with contextlib.suppress(OSError):
                _write(kill, "1")
            wait_pids_exit(pids, timeout)
        _kill_pids(self.pids, timeout)

    def destroy(self) -> None:
        if not self.dir.is_dir():
            return
        self.kill_all()
        for sub in sorted(
            (p for p in self.dir.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)
        ):
            _rmdir_retry(sub)
        _rmdir_retry(self.dir)


def shares_to_weight(shares: int) -> int:
    """The conversion runc and the kubelet use (cgroup v1 shares -> v2 weight)."""
    if shares <= 0:
        return 0
    return 1 + ((shares - 2) * 9999) // 262142


def is_v2(root: Path = CGROUP_ROOT) -> bool:
    return (root / "cgroup.controllers").exists()


def open_cgroup(relpath: str, root: Path = CGROUP_ROOT) -> Cgroup:
    if is_v2(root):
        return CgroupV2(relpath, root)
    return CgroupV1(relpath, root)
