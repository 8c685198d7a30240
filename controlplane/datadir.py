"""The control plane's data directory: who runs on it, and what wrote it.

`<data-dir>/controlplane.lock` is held (flock) by the control plane running
on the directory, with its pid inside: a second control plane, or a restore
(`--cluster-reset`), on a directory in use is refused, naming the pid. The
kernel drops the lock when the process ends, however it ends.

`<data-dir>/version.json` records the skiff version and the storage format
that last ran on the directory ({"skiffVersion", "storageFormat"}). A newer
skiff migrates an older format at start (migrate.py) and records its own; a
directory of a newer format than this skiff knows is refused with the
reason (a downgrade is not supported). A directory with a database but no
version.json was made before versions were recorded: storage format 1.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.metadata
import json
import os
from dataclasses import dataclass
from pathlib import Path

from machinery.atomicfile import write_private

# 1: before version.json (objects could be stored in any served apiVersion).
# 2: every stored object is in its kind's storage apiVersion.
STORAGE_FORMAT = 2
LEGACY_FORMAT = 1
LOCK_FILE = "controlplane.lock"
VERSION_FILE = "version.json"


class DataDirError(Exception):
    """The data directory cannot be used now; the message says why."""


def skiff_version() -> str:
    try:
        return importlib.metadata.version("skiff")
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0+unknown"


class DataDirLock:
    """The exclusive claim of one process on a data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self, purpose: str = "run a control plane") -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise DataDirError(
                f"{self.path.parent} is in use by a running control plane (pid {holder}); "
                f"refusing to {purpose} on it: stop that control plane first"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None


@dataclass(frozen=True)
class Version:
    skiff: str
    storage_format: int


def read_version(data_dir: Path, has_state: bool) -> Version | None:
    """The recorded version; the legacy format for a directory with state but
    no record; None for a fresh directory. DataDirError for a damaged record."""
    path = Path(data_dir) / VERSION_FILE
    try:
        raw = json.loads(path.read_text())
        return Version(str(raw["skiffVersion"]), int(raw["storageFormat"]))
    except FileNotFoundError:
        return Version("", LEGACY_FORMAT) if has_state else None
    except (ValueError, KeyError, TypeError, OSError) as err:
        raise DataDirError(f"{path}: cannot read the data directory's version ({err})") from None


def check_version(data_dir: Path, has_state: bool) -> Version | None:
    """read_version, refusing a format newer than this skiff's (a downgrade)."""
    found = read_version(data_dir, has_state)
    if found is not None and found.storage_format > STORAGE_FORMAT:
        raise DataDirError(
            f"{data_dir} was last used by skiff {found.skiff or 'unknown'} (storage format "
            f"{found.storage_format}); this skiff {skiff_version()} knows storage formats up to "
            f"{STORAGE_FORMAT}: refusing to start, a downgrade is not supported (run skiff "
            f"{found.skiff or 'of that version'} or newer, or restore a snapshot this version "
            "took with --cluster-reset)"
        )
    return found


def write_version(data_dir: Path) -> None:
    record = {"skiffVersion": skiff_version(), "storageFormat": STORAGE_FORMAT}
    write_private(Path(data_dir) / VERSION_FILE, json.dumps(record) + "\n", 0o600)
