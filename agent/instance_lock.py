"""One `skiff up` per data dir: an flock held for the process's life.

The lock goes with the process however it ends (kill -9 included), so a
lock that can be taken means no instance runs and anything of it on the
host is a leftover; one that cannot names the pid that holds it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_NAME = "skiff-up.lock"


class Busy(Exception):
    def __init__(self, path: Path, pid: int) -> None:
        super().__init__(f"another skiff up (pid {pid or '?'}) runs with {path.parent}")
        self.pid = pid


class InstanceLock:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / LOCK_NAME
        self.fd = -1

    def acquire(self) -> None:
        """Take the lock and write our pid; Busy if a live process holds it."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            raise Busy(self.path, int(text) if text.isdigit() else 0) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing drops the flock
            self.fd = -1

    def __enter__(self) -> InstanceLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
