"""What a benchmark measures of the host: the RSS, PSS and CPU time of a
process (and of its tree), and the CPU time of a cgroup tree (with `daemon_cgroup` to start a daemon
inside one), on cgroup v2 or v1's cpuacct.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def pss_rss_kb(pid: int) -> tuple[int, int]:
    pss = rss = 0
    with contextlib.suppress(OSError), open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
            elif line.startswith("Rss:"):
                rss = int(line.split()[1])
    return pss, rss


def cpu_hierarchy() -> tuple[Path, str] | None:
    """The hierarchy that accounts CPU time, and its name in /proc/self/cgroup
    ("" for the unified one)."""
    root = Path("/sys/fs/cgroup")
    if (root / "cgroup.controllers").exists():
        return root, ""
    if (root / "cpuacct").is_dir():
        return root / "cpuacct", "cpuacct"
    return None


def own_cgroup() -> Path | None:
    """This process's cgroup directory in the CPU-accounting hierarchy."""
    found = cpu_hierarchy()
    if found is None:
        return None
    root, name = found
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, ctrls, path = line.split(":", 2)
            if (name in ctrls.split(",")) if name else ctrls == "":
                return root / path.lstrip("/")
    return None


def cpu_usage_s(parent: str) -> float:
    """CPU seconds used so far by everything under the cgroup `parent`: a
    target's daemon (started inside it by `daemon_cgroup`), the processes it
    starts, and the pods. NaN where it cannot be read."""
    found = cpu_hierarchy()
    if found is not None:
        d = found[0] / parent.strip("/")
        with contextlib.suppress(OSError, ValueError):
            if found[1]:
                return int((d / "cpuacct.usage").read_text()) / 1e9
            for line in (d / "cpu.stat").read_text().splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
    return float("nan")


@contextlib.contextmanager
def daemon_cgroup(parent: str) -> Iterator[None]:
    """Run the body (which starts the daemon) with this process in
    `<parent>/daemon` for CPU accounting, then move back. The machine is
    shared, so CPU time says more than wall time about a runtime's cost."""
    found = cpu_hierarchy()
    home = own_cgroup()
    if found is None or home is None:
        yield
        return
    daemon = found[0] / parent.strip("/") / "daemon"
    try:
        daemon.mkdir(parents=True, exist_ok=True)
        (daemon / "cgroup.procs").write_text(str(os.getpid()))
    except OSError:
        yield
        return
    try:
        yield
    finally:
        (home / "cgroup.procs").write_text(str(os.getpid()))


def rss(pid: int) -> int:
    """VmRSS of `pid` in bytes (0 if gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(p) for p in f.read().split()]
    except OSError:
        pass
    return out


def descendants(pid: int) -> list[int]:
    todo, seen = children(pid), []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo += children(p)
    return seen


def pss(pid: int) -> int:
    """Proportional set size of `pid` in bytes: shared pages divided among
    their sharers (monitors forked from the runtime's zygote share most)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def in_pod_cgroup(pid: int, name: str) -> bool:
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            return f"/{name}/pods" in f.read()
    except OSError:
        return False


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_percent(pid: int, window: float) -> float:
    """The process's CPU use over `window` seconds, in percent of one core."""
    start, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(window)
    return 100.0 * (cpu_seconds(pid) - start) / (time.monotonic() - t0)


@dataclass
class TreeMemory:
    rows: list[tuple[int, str, int, int]]  # pid, command, RSS, PSS

    @property
    def rss(self) -> int:
        return sum(r[2] for r in self.rows)

    @property
    def pss(self) -> int:
        return sum(r[3] for r in self.rows)


def tree_memory(root: int) -> TreeMemory:
    """RSS and PSS of `root` and every descendant, but containers and their
    monitors (none at rest)."""
    rows = []
    for pid in [root, *descendants(root)]:
        if comm(pid) in ("skiff-monitor", "skiff-sandbox"):
            continue
        try:
            with open(f"/proc/{pid}/cgroup") as f:
                if "/pods" in f.read():
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        what = " ".join(a.decode(errors="replace") for a in argv[1:5])
        rows.append((pid, what, rss(pid), pss(pid)))
    return TreeMemory(rows)


def settle(read: Callable[[], T], seconds: float = 3.0) -> T:
    """A steady reading: `read()` sampled every half second for `seconds`, the last kept."""
    deadline = time.monotonic() + seconds
    value = read()
    while time.monotonic() < deadline:
        time.sleep(0.5)  # sampling interval of a steady-state reading
        value = read()
    return value
