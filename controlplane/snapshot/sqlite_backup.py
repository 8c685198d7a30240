"""SQLite snapshots: SQLite's online backup API, and installing a restored copy.

`backup` copies the live database (WAL mode, the server writing) in one
backup step, so the copy is one read transaction: every write the server
acknowledged before the copy began (acknowledged only once committed) is
in it, none half-done. `check` opens a restored payload and refuses it when
it is no skiff control-plane database. `install` puts it in place of
`state.db` with its revision bumped past the replaced database's and the
history before it marked compacted (as `etcdutl snapshot restore
--bump-revision --mark-compacted` does for Kubernetes): clients holding a
newer resourceVersion relist instead of waiting for revisions that will
never come. The replaced files are kept beside it (`state.db.before-restore-<ts>`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path

from controlplane.snapshot.fileformat import SnapshotError
from controlplane.storage.sqlite import SCHEMA_MARKER
from machinery import atomicfile

DB_NAME = "state.db"
# How far past the replaced database's revision a restore starts.
REVISION_BUMP = 1000


def backup(db_path: Path, dest: Path) -> int:
    """Copy the database at `db_path` into a new file `dest`; its revision."""
    if not db_path.exists():
        raise SnapshotError(f"{db_path}: no database to snapshot")
    source = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        target = sqlite3.connect(dest)
        try:
            source.backup(target)  # pages=-1: one step, one read transaction
            row = target.execute("SELECT v FROM meta WHERE k='revision'").fetchone()
        finally:
            target.close()
    except sqlite3.Error as err:
        raise SnapshotError(f"{db_path}: the backup failed: {err}") from None
    finally:
        source.close()
    os.chmod(dest, 0o600)
    return int(row[0]) if row else 0


def check(payload: Path, origin: Path) -> int:
    """Refuse a payload that is no intact skiff database; its revision."""
    try:
        db = sqlite3.connect(f"file:{payload}?mode=ro", uri=True)
        try:
            rows = [r[0] for r in db.execute("PRAGMA integrity_check").fetchall()]
            if rows != ["ok"]:
                raise SnapshotError(
                    f"{origin}: the database in it fails its integrity check "
                    f"({'; '.join(str(r) for r in rows[:3])}); refusing to restore it"
                )
            marker = db.execute("SELECT v FROM meta WHERE k='schema'").fetchone()
            rev = db.execute("SELECT v FROM meta WHERE k='revision'").fetchone()
        finally:
            db.close()
    except sqlite3.Error as err:
        raise SnapshotError(
            f"{origin}: the payload is not a readable SQLite database ({err}); "
            "refusing to restore it"
        ) from None
    if marker is None or marker[0] != SCHEMA_MARKER or rev is None:
        raise SnapshotError(f"{origin}: not a skiff control-plane database; refusing to restore it")
    return int(rev[0])


def _revision(db_path: Path) -> int:
    """The revision of the database being replaced (0 when unreadable)."""
    if not db_path.exists():
        return 0
    with contextlib.suppress(sqlite3.Error, ValueError, TypeError):
        db = sqlite3.connect(db_path)
        try:
            row = db.execute("SELECT v FROM meta WHERE k='revision'").fetchone()
            return int(row[0]) if row else 0
        finally:
            db.close()
    return 0


def install(payload: Path, data_dir: Path) -> tuple[int, Path | None]:
    """Replace `<data_dir>/state.db` with the checked `payload` (a file in
    data_dir); (the restored revision, where the replaced database went)."""
    db_path = data_dir / DB_NAME
    bumped = max(_revision(db_path), check(payload, payload)) + REVISION_BUMP
    db = sqlite3.connect(payload, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=DELETE")
        db.execute("BEGIN")
        db.execute("DELETE FROM history")
        db.execute("UPDATE meta SET v=? WHERE k IN ('revision', 'compacted')", (str(bumped),))
        db.execute("COMMIT")
    finally:
        db.close()
    aside: Path | None = None
    if db_path.exists():
        aside = data_dir / f"{DB_NAME}.before-restore-{int(time.time())}"
        atomicfile.move_aside(db_path, aside)
        for extra in ("-wal", "-shm"):
            side = Path(f"{db_path}{extra}")
            if side.exists():
                atomicfile.move_aside(side, Path(f"{aside}{extra}"))
    os.chmod(payload, 0o600)
    atomicfile.publish(payload, db_path, durable=True)
    return bumped, aside
