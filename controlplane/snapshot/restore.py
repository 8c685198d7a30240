"""`skiff controlplane --cluster-reset --cluster-reset-restore-path FILE`.

Restores a snapshot into the data directory (SQLite) or under the etcd
prefix (etcd), with the data directory locked (the caller holds its
DataDirLock: a restore never runs under a live control plane). The whole
snapshot is checked first (header, size, SHA-256, then the database
itself), so a truncated or corrupt one is refused with the reason before
anything is replaced. The data directory's version record becomes the
snapshot's, so a snapshot of an older skiff is migrated at start like an
older data directory; one of a newer storage format is refused.
"""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path

from controlplane.datadir import STORAGE_FORMAT, VERSION_FILE, skiff_version
from controlplane.snapshot import fileformat
from controlplane.snapshot.catalog import Source
from controlplane.snapshot.fileformat import SnapshotError
from machinery.atomicfile import write_private

log = logging.getLogger("skiff.snapshot")


def cluster_reset(source: Source, snapshot: Path, etcd_prefix: str = "/skiff") -> str:
    """Restore `snapshot`; a one-line account of what was done."""
    from controlplane.snapshot import etcd_backup, sqlite_backup

    data_dir = source.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=data_dir, prefix=".restoring-") as tmp:
        payload = Path(tmp) / "payload"
        meta = fileformat.extract(snapshot, payload)
        if meta.store != source.store:
            raise SnapshotError(
                f"{snapshot}: a snapshot of a {meta.store} store cannot be restored into "
                f"--store {source.store}"
            )
        if meta.storage_format > STORAGE_FORMAT:
            raise SnapshotError(
                f"{snapshot}: taken by skiff {meta.skiff_version} (storage format "
                f"{meta.storage_format}); this skiff {skiff_version()} knows formats up to "
                f"{STORAGE_FORMAT}: refusing to restore it"
            )
        if source.store == "etcd":
            count = etcd_backup.restore(payload, list(source.etcd_endpoints), etcd_prefix)
            done = f"restored {count} keys under {etcd_prefix} from {snapshot}"
        else:
            sqlite_backup.check(payload, snapshot)  # before anything is replaced
            revision, aside = sqlite_backup.install(payload, data_dir)
            kept = f"; the replaced database is {aside}" if aside else ""
            done = f"restored {snapshot} (now at revision {revision}){kept}"
    record = {"skiffVersion": meta.skiff_version, "storageFormat": meta.storage_format}
    write_private(data_dir / VERSION_FILE, json.dumps(record) + "\n", 0o600)
    log.info("cluster reset: %s", done)
    return done
