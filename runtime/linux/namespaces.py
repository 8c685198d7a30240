"""Pinning namespaces: bind-mount `/proc/<pid>/ns/<kind>` onto a file under
the runtime's state directory so the namespace outlives its processes, and
unpin them again.

Bind mounts are not namespace switches, so these are safe to call from the
multi-threaded runtime. Entering a namespace (`setns`) happens only in the
monitor's children, never here.
"""

from __future__ import annotations

import contextlib
import errno
from pathlib import Path

from machinery import libc

KINDS = ("net", "ipc", "uts", "pid")


def pin(pid: int, kind: str, target: Path) -> None:
    """Bind `/proc/<pid>/ns/<kind>` onto `target` (created empty)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.touch(exist_ok=True)
    libc.mount(f"/proc/{pid}/ns/{kind}", str(target), None, libc.MS_BIND)


def unpin(target: Path) -> None:
    """Undo `pin`; a missing or already unmounted file is fine."""
    try:
        libc.umount2(str(target), libc.MNT_DETACH)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOENT):
            raise
    with contextlib.suppress(FileNotFoundError, IsADirectoryError):
        target.unlink()


def is_pinned(target: Path) -> bool:
    """True if `target` is a mounted nsfs file."""
    want = str(target)
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 4 and fields[4].encode().decode("unicode_escape") == want:
                    return True
    except OSError:
        return False
    return False
