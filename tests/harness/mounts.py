"""Scratch directories that may have mounts under them; unmounted on exit."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def mounts_under(path: Path) -> list[str]:
    """Mount points at or below `path`, deepest first."""
    prefix = str(path.resolve())
    points: list[str] = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4].encode().decode("unicode_escape")
            if point == prefix or point.startswith(prefix + "/"):
                points.append(point)
    return sorted(points, key=len, reverse=True)


def unmount_all(path: Path) -> None:
    for point in mounts_under(path):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)


@contextmanager
def scratch_dir(base: Path) -> Iterator[Path]:
    """A directory for state (sockets, mounts, layers) removed with every
    mount below it, even when the test fails."""
    base.mkdir(parents=True, exist_ok=True)
    try:
        yield base
    finally:
        unmount_all(base)
        shutil.rmtree(base, ignore_errors=True)
