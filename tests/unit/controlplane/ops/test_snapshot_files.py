"""Snapshot files and restores without a server: bad input refused before anything is
replaced, names, ls/delete/prune, the schedule, the revision bump."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from controlplane.datadir import DataDirError, DataDirLock
from controlplane.snapshot import catalog, fileformat
from controlplane.snapshot.catalog import Source
from controlplane.snapshot.cli import main as snapshot_main
from controlplane.snapshot.fileformat import Metadata, SnapshotError
from controlplane.snapshot.restore import cluster_reset
from controlplane.snapshot.schedule import ScheduledSnapshots
from controlplane.storage.sqlite import SqliteStore


def _db_with(data_dir: Path, keys: list[str]) -> int:
    store = SqliteStore(data_dir / "state.db")
    try:
        for k in keys:
            store.create(f"/registry/configmaps/default/{k}", json.dumps({"k": k}).encode())
        return store.current_revision()
    finally:
        store.close()


def _keys(data_dir: Path) -> set[str]:
    store = SqliteStore(data_dir / "state.db")
    try:
        return {kv.key.rsplit("/", 1)[1] for kv in store.range("/registry/").items}
    finally:
        store.close()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def taken(tmp_path: Path) -> tuple[Path, Path]:
    """A data dir with keys a, b; a snapshot of it; then c added."""
    data = tmp_path / "data"
    data.mkdir()
    _db_with(data, ["a", "b"])
    entry = catalog.save(Source("sqlite", data), data / "snapshots", node="n1")
    _db_with(data, ["c"])
    return data, entry.path


def test_restore_brings_back_the_snapshot_and_keeps_the_replaced_db(
    taken: tuple[Path, Path],
) -> None:
    data, snap = taken
    before = SqliteStore(data / "state.db")
    old_rev = before.current_revision()
    before.close()
    cluster_reset(Source("sqlite", data), snap)
    assert _keys(data) == {"a", "b"}
    store = SqliteStore(data / "state.db")
    try:  # past the replaced revision, and older revisions compacted (clients relist)
        assert store.current_revision() > old_rev
        assert store.compacted_revision() == store.current_revision()
    finally:
        store.close()
    assert [p.name for p in data.glob("state.db.before-restore-*")]
    assert json.loads((data / "version.json").read_text())["storageFormat"] == 2


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda b: b[:-100], "truncated: "),
        (lambda b: b[:-300] + bytes([b[-300] ^ 0xFF]) + b[-299:], "corrupt: the payload's SHA-256"),
        (lambda b: b"garbage" + b[7:], "not a skiff snapshot"),
        (lambda b: b[:40], "truncated: the metadata line is incomplete"),
        (lambda b: b + b"x", "corrupt: "),
    ],
)
def test_a_damaged_snapshot_is_refused_before_anything_is_replaced(
    taken: tuple[Path, Path], damage, reason: str
) -> None:
    data, snap = taken
    snap.write_bytes(damage(snap.read_bytes()))
    db_before = _sha(data / "state.db")
    with pytest.raises(SnapshotError, match=reason):
        cluster_reset(Source("sqlite", data), snap)
    assert _sha(data / "state.db") == db_before
    assert _keys(data) == {"a", "b", "c"}
    assert not list(data.glob(".restoring-*")) and not list(data.glob("state.db.before-*"))


def test_a_payload_that_is_no_skiff_database_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    _db_with(data, ["x"])
    payload = tmp_path / "payload"
    payload.write_bytes(b"SQLite format 3\x00" + b"\x00" * 5000)
    size, sha = fileformat.digest(payload)
    bad = tmp_path / "bad"
    fileformat.write(bad, payload, Metadata("sqlite", "t", "0", 2, size, sha))
    with pytest.raises(SnapshotError, match=r"not a readable SQLite database|not a skiff"):
        cluster_reset(Source("sqlite", data), bad)
    assert _keys(data) == {"x"}


def test_a_snapshot_of_another_store_or_a_newer_format_is_refused(taken: tuple[Path, Path]) -> None:
    data, snap = taken
    with pytest.raises(
        SnapshotError, match="a snapshot of a sqlite store cannot be restored into --store etcd"
    ):
        cluster_reset(Source("etcd", data, ("127.0.0.1:1",)), snap)
    meta = fileformat.metadata(snap)
    payload = data / "p"
    fileformat.extract(snap, payload)
    newer = data / "newer"
    fileformat.write(newer, payload, Metadata(**{**meta.__dict__, "storage_format": 99}))
    with pytest.raises(SnapshotError, match=r"storage format 99.*refusing to restore"):
        cluster_reset(Source("sqlite", data), newer)
    assert _keys(data) == {"a", "b", "c"}


def test_the_data_dir_lock_names_the_holder(tmp_path: Path) -> None:
    held = DataDirLock(tmp_path)
    held.acquire()
    try:
        with pytest.raises(DataDirError, match=r"in use by a running control plane \(pid \d+\)"):
            DataDirLock(tmp_path).acquire("restore a snapshot")
    finally:
        held.release()
    again = DataDirLock(tmp_path)
    again.acquire()
    again.release()


def test_ls_delete_prune_with_k3s_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    data.mkdir()
    _db_with(data, ["a"])
    argv = ["--data-dir", str(data)]
    for _ in range(7):
        assert snapshot_main(["save", *argv]) == 0
    assert snapshot_main(["save", "--name", "before-upgrade", *argv]) == 0
    out = capsys.readouterr().out
    assert out.count("Snapshot on-demand-") == 7 and "Snapshot before-upgrade-" in out
    names = [e.name for e in catalog.entries(data / "snapshots")]
    assert len(names) == 8 and all(n.split("-")[-2] for n in names)
    assert snapshot_main(["ls", *argv]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["Name", "Location", "Size", "Created"]
    assert len(table) == 9 and table[1].split()[1].startswith("file:///")
    assert snapshot_main(["prune", "--snapshot-retention", "5", *argv]) == 0
    pruned = capsys.readouterr().out
    assert pruned.count("Removing local snapshot") == 2
    left = [e.name for e in catalog.entries(data / "snapshots")]
    assert len(left) == 6 and any(n.startswith("before-upgrade-") for n in left)
    on_demand = sorted(n for n in names if n.startswith("on-demand-"))
    assert on_demand[-1] in left  # the newest kept
    assert snapshot_main(["delete", "nope", *argv]) == 1
    assert "'nope' not found" in capsys.readouterr().err
    assert len(catalog.entries(data / "snapshots")) == 6
    assert snapshot_main(["delete", left[0], *argv]) == 0
    assert f"Snapshot {left[0]} deleted." in capsys.readouterr().out
    assert snapshot_main(["save", "--name", "../x", *argv]) == 1


def test_scheduled_snapshots_fire_on_the_cron_and_keep_the_retention(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    _db_with(data, ["a"])
    sched = ScheduledSnapshots(
        Source("sqlite", data), data / "snapshots", "*/5 * * * *", retention=2
    )
    first = sched.next_time
    assert first > time.time() and int(first) % 300 == 0
    assert sched.due(first - 1) is None
    taken = [sched.due(first), sched.due(first + 300), sched.due(first + 600)]
    assert all(e is not None and e.name.startswith("etcd-snapshot-") for e in taken)
    assert [e.name for e in catalog.entries(data / "snapshots")] == [e.name for e in taken[1:] if e]
    with pytest.raises(ValueError, match="snapshot-schedule-cron"):
        ScheduledSnapshots(Source("sqlite", data), data / "snapshots", "every day")
