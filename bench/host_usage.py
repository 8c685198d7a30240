"""What a benchmark measures of the host: the PSS and RSS of a process, and
the CPU time of a cgroup tree (with `daemon_cgroup` to start a daemon
inside one), on cgroup v2 or v1's cpuacct.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


def pss_rss_kb(pid: int) -> tuple[int, int]:
    pss = rss = 0
    with contextlib.suppress(OSError), open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
            elif line.startswith("Rss:"):
                rss = int(line.split()[1])
    return pss, rss


def _cpu_root() -> tuple[Path, str] | None:
    """The hierarchy that accounts CPU time, and its name in /proc/self/cgroup
    ("" for the unified one)."""
    root = Path("/sys/fs/cgroup")
    if (root / "cgroup.controllers").exists():
        return root, ""
    if (root / "cpuacct").is_dir():
        return root / "cpuacct", "cpuacct"
    return None


def cpu_usage_s(parent: str) -> float:
    """CPU seconds used so far by everything under the cgroup `parent`: a
    target's daemon (started inside it by `daemon_cgroup`), the processes it
    starts, and the pods. NaN where it cannot be read."""
    found = _cpu_root()
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
    found = _cpu_root()
    home = None
    if found is not None:
        root, name = found
        with contextlib.suppress(OSError, ValueError):
            for line in Path("/proc/self/cgroup").read_text().splitlines():
                _, ctrls, path = line.split(":", 2)
                if (name in ctrls.split(",")) if name else ctrls == "":
                    home = root / path.lstrip("/")
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
