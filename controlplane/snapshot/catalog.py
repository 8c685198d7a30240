"""The snapshot directory: taking, listing, deleting and pruning snapshots.

Names follow k3s: `<name>-<node>-<unix seconds>` (`on-demand` for `skiff
snapshot save`, `etcd-snapshot` for scheduled ones), in `<data-dir>/snapshots`
unless told otherwise. Pruning keeps the newest `retention` snapshots of
one name prefix, as k3s does.
"""

from __future__ import annotations

import re
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from controlplane.datadir import STORAGE_FORMAT, skiff_version
from controlplane.snapshot import fileformat
from controlplane.snapshot.fileformat import Metadata, SnapshotError
from machinery import rfc3339

ON_DEMAND = "on-demand"
SCHEDULED = "etcd-snapshot"
DEFAULT_RETENTION = 5  # k3s' --etcd-snapshot-retention
DEFAULT_CRON = "0 */12 * * *"  # k3s' --etcd-snapshot-schedule-cron
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Source:
    """Where a snapshot's state comes from: the store the control plane uses."""

    store: str  # sqlite | etcd
    data_dir: Path
    etcd_endpoints: tuple[str, ...] = ()


@dataclass(frozen=True)
class Entry:
    name: str
    path: Path
    size: int
    created: float  # unix seconds


def snapshot_dir(data_dir: Path, override: str = "") -> Path:
    return Path(override) if override else Path(data_dir) / "snapshots"


def check_name(name: str) -> str:
    if not _NAME.match(name) or len(name) > 200:
        raise SnapshotError(f"--name {name!r}: letters, digits, '.', '_' and '-' only")
    return name


def save(source: Source, directory: Path, name: str = ON_DEMAND, node: str = "") -> Entry:
    """Take a snapshot now; the new entry. Consistent while the server writes."""
    from controlplane.snapshot import etcd_backup, sqlite_backup

    check_name(name)
    node = node or socket.gethostname()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    now = time.time()
    full = f"{name}-{node}-{int(now)}"
    path = directory / full
    if path.exists():  # two in one second: k3s would overwrite; keep both
        full = f"{full}-{int((now % 1) * 1000):03d}"
        path = directory / full
    with tempfile.TemporaryDirectory(dir=directory, prefix=".taking-") as tmp:
        payload = Path(tmp) / "payload"
        if source.store == "etcd":
            revision = etcd_backup.backup(list(source.etcd_endpoints), payload)
        else:
            revision = sqlite_backup.backup(source.data_dir / sqlite_backup.DB_NAME, payload)
        size, sha = fileformat.digest(payload)
        created = rfc3339.format_time(now)
        meta = Metadata(source.store, created, skiff_version(), STORAGE_FORMAT, size, sha,
                        node, revision)  # fmt: skip
        fileformat.write(path, payload, meta)
    return Entry(full, path, path.stat().st_size, now)


def entries(directory: Path) -> list[Entry]:
    """Every snapshot in the directory, oldest first."""
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        if path.name.startswith(".") or not path.is_file():
            continue
        try:
            fileformat.metadata(path)
        except SnapshotError:
            continue  # not ours
        st = path.stat()
        found.append(Entry(path.name, path, st.st_size, st.st_mtime))
    return sorted(found, key=lambda e: (e.created, e.name))


def delete(directory: Path, names: list[str]) -> list[str]:
    """Delete the named snapshots; the names of those deleted. SnapshotError
    for a name that is no snapshot in the directory (nothing deleted then)."""
    known = {e.name: e for e in entries(directory)}
    missing = [n for n in names if n not in known]
    if missing:
        raise SnapshotError(f"snapshot {missing[0]!r} not found in {directory}")
    for name in names:
        known[name].path.unlink(missing_ok=True)
    return names


def prune(directory: Path, name: str = ON_DEMAND, retention: int = DEFAULT_RETENTION) -> list[str]:
    """Delete all but the newest `retention` snapshots named `name-...`; those deleted."""
    if retention < 1:
        raise SnapshotError(f"--snapshot-retention {retention}: must keep at least one")
    mine = [e for e in entries(directory) if e.name.startswith(f"{name}-")]
    doomed = mine[: max(0, len(mine) - retention)]
    for e in doomed:
        e.path.unlink(missing_ok=True)
    return [e.name for e in doomed]
