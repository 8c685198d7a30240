"""Temporary cgroups for tests, on cgroup v2 (unified) or v1 (per controller).

The cgroup is removed on exit after any processes left in it are killed (by
the pids the cgroup itself lists, never by name).
"""

from __future__ import annotations

import functools
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.harness.netns import unique_name
from tests.harness.wait import wait_for

CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("cpu,cpuacct", "memory", "pids", "cpuset")


def is_cgroup_v2(root: Path = CGROUP_ROOT) -> bool:
    return (root / "cgroup.controllers").exists()


@dataclass
class TempCgroup:
    """`name` is the path relative to each hierarchy root; `paths` are the
    directories made (one on v2, one per mounted controller on v1)."""

    name: str
    version: int
    paths: list[Path] = field(default_factory=list)


def procs(path: Path) -> list[int]:
    """The pids in cgroup `path` ([] when it is gone or unreadable)."""
    try:
        return [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def remove_cgroup_tree(path: Path) -> None:
    """Kill what runs in `path` and below, then rmdir bottom-up."""
    if not path.exists():
        return
    below = sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
    for d in [*below, path]:
        for pid in procs(d):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        wait_for(functools.partial(_empty, d), timeout=10, message=f"{d} to empty")
        wait_for(functools.partial(try_rmdir, d), timeout=10, message=f"rmdir {d}")


def _empty(path: Path) -> bool:
    return not procs(path)


def try_rmdir(path: Path) -> bool:
    """Remove cgroup `path`: whether it is gone (False while still in use)."""
    try:
        path.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


@contextmanager
def temp_cgroup(prefix: str = "skiff-test-") -> Iterator[TempCgroup]:
    name = unique_name(prefix, 40)
    if is_cgroup_v2():
        cg = TempCgroup(name=name, version=2, paths=[CGROUP_ROOT / name])
    else:
        cg = TempCgroup(name=name, version=1)
        for ctrl in V1_CONTROLLERS:
            if (CGROUP_ROOT / ctrl).is_dir():
                cg.paths.append(CGROUP_ROOT / ctrl / name)
    made: list[Path] = []
    try:
        for p in cg.paths:
            p.mkdir()
            made.append(p)
        yield cg
    finally:
        for p in made:
            remove_cgroup_tree(p)
