"""The kubelet's atomic writer for API-backed volumes (configMap, secret,
downwardAPI, projected): a reader in the container sees the whole old set
of files or the whole new one, never a mix.

The payload is written into a fresh timestamped directory
(`..2026_12_01_22_53_42.123456789`), then the `..data` symlink is pointed
at it by renaming a `..data_tmp` symlink over it (one rename, atomic), and
each top-level name of the payload is a symlink through `..data`
(`key -> ..data/key`). Names no longer in the payload lose their symlink,
and the previous timestamped directory is removed. Nothing is written when
the payload is what the volume already holds. Writes are serialised on
the node (`LOCK`). A container that mounts a
single key with subPath gets a bind mount of that one file at start
(agent/subpath.py) and, as in Kubernetes, does not see later updates.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from agent.pod_config import ConfigError
from machinery.atomicfile import swap_symlink

DATA = "..data"
# One writer at a time on this node (the pod workers' set-up, the refresh
# worker, the sync period's pass; teardown holds it too), so two writers
# never race on one volume's ..data nor a refresh remake a removed one.
LOCK = threading.RLock()


def _check_path(rel: str) -> None:
    parts = Path(rel).parts
    if not rel or rel.startswith("/") or ".." in parts or parts[0].startswith(".."):
        raise ConfigError(f"volume file path {rel!r} must be relative without '..'")


def current(target: Path) -> dict[str, bytes] | None:
    """The payload the volume shows now (through `..data`), or None when it
    has none yet."""
    data = target / DATA
    if not data.is_symlink():
        return None
    base = target / os.readlink(data)
    out: dict[str, bytes] = {}
    for dirpath, _, files in os.walk(base):
        for f in files:
            p = Path(dirpath) / f
            out[str(p.relative_to(base))] = p.read_bytes()
    return out


def _stamp() -> str:
    return time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime())


def write(
    target: Path,
    files: Mapping[str, tuple[bytes, int | None]],
    default_mode: int,
    *,
    refresh: bool = False,
) -> bool:
    """Publish `files` (relative path -> (bytes, mode or None)) under
    `target`; False when the volume already held exactly them, or, for a
    `refresh`, when the volume is not (or no longer) set up."""
    for rel in files:
        _check_path(rel)
    wanted = {str(Path(rel)): content for rel, (content, _) in files.items()}
    with LOCK:
        if refresh and not (target / DATA).is_symlink():
            return False  # torn down meanwhile: never made again by a refresh
        if current(target) == wanted:
            return False
        _publish(target, files, default_mode)
    return True


def _publish(
    target: Path, files: Mapping[str, tuple[bytes, int | None]], default_mode: int
) -> None:
    target.mkdir(parents=True, exist_ok=True)
    new = Path(tempfile.mkdtemp(prefix=_stamp(), dir=target))
    for rel, (content, mode) in files.items():
        dest = new / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        # created with its final mode, never readable before a chmod
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0)
        with open(fd, "wb") as f:
            os.fchmod(fd, mode if mode is not None else default_mode)
            f.write(content)
    new.chmod(0o755)
    old = os.readlink(target / DATA) if (target / DATA).is_symlink() else None
    swap_symlink(target / DATA, new.name)  # through ..data_tmp, renamed over ..data
    tops = {Path(rel).parts[0] for rel in files}
    for top in tops:
        link = target / top
        if not link.is_symlink():
            link.symlink_to(Path(DATA) / top)
    for entry in target.iterdir():
        if entry.is_symlink() and entry.name not in tops and not entry.name.startswith(".."):
            entry.unlink()
    if old and old != new.name:
        shutil.rmtree(target / old, ignore_errors=True)
