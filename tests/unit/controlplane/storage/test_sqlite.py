"""SQLite-only behaviour: durability across reopen, refusal of damaged files."""

from __future__ import annotations

from pathlib import Path

import pytest

from controlplane.storage.interface import (
    CorruptStore,
    KeyNotFound,
    RevisionMismatch,
    StoreUnavailable,
)
from controlplane.storage.sqlite import SqliteStore


def test_reopen_keeps_data_and_revision(tmp_path: Path) -> None:
    path = tmp_path / "db"
    s = SqliteStore(path)
    rev = s.create("/a", b"1")
    s.close()
    s = SqliteStore(path)
    try:
        assert s.get("/a").value == b"1"
        assert s.current_revision() == rev
        assert s.create("/b", b"2") == rev + 1
        assert [e.key for e in s.history(0, rev + 1)] == ["/a", "/b"]
    finally:
        s.close()


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(b""),
        lambda p: p.write_bytes(b"this is not a database at all" * 100),
        lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 3]),
    ],
    ids=["empty", "garbage", "truncated"],
)
def test_damaged_database_is_refused(tmp_path: Path, damage) -> None:
    path = tmp_path / "db"
    s = SqliteStore(path)
    for i in range(300):
        s.create(f"/k/{i:04d}", b"x" * 500)
    s.close()
    for extra in ("-wal", "-shm"):
        Path(str(path) + extra).unlink(missing_ok=True)
    damage(path)
    before = path.read_bytes()
    with pytest.raises(CorruptStore) as info:
        SqliteStore(path)
    assert "refusing to start" in str(info.value)
    assert path.read_bytes() == before  # never reset


def test_group_commit_batches_concurrent_writes(tmp_path: Path) -> None:
    import threading

    s = SqliteStore(tmp_path / "db")
    sizes: list[int] = []
    original = s._commit_batch

    def counting(batch):
        sizes.append(len(batch))
        original(batch)

    s._commit_batch = counting  # type: ignore[method-assign]

    def writer(i: int) -> None:
        for j in range(50):
            s.create(f"/g/{i}/{j}", b"v")

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s.close()
    assert sum(sizes) == 500
    assert max(sizes) > 1  # several requests shared one fsync


def test_prefix_revision_moves_with_writes_under_the_prefix_only(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "state.db")
    try:
        start = store.prefix_revision("/registry/namespaces/")
        store.create("/registry/pods/a/p", b"{}")
        assert store.prefix_revision("/registry/namespaces/") == start
        rev = store.create("/registry/namespaces/a", b"{}")
        # Moved before create() returned: a reader that sees it reads the new value.
        assert store.prefix_revision("/registry/namespaces/") == rev
        (updated,) = store.update_many([("/registry/namespaces/a", b'{"x":1}', rev)])
        assert store.prefix_revision("/registry/namespaces/") == updated
    finally:
        store.close()


def test_prefix_writes_counts_every_write_under_the_prefix(tmp_path: Path) -> None:
    """What the quota admission relies on to keep what it wrote: n + k after
    its own k writes means nobody else wrote there, a commit of several
    writes counts each, and the count moves before the write returns."""
    store = SqliteStore(tmp_path / "state.db")
    prefix = "/registry/resourcequotas/a/"
    try:
        start = store.prefix_writes(prefix)
        store.create("/registry/pods/a/p", b"{}")
        store.create("/registry/resourcequotas/b/q", b"{}")
        assert store.prefix_writes(prefix) == start
        rev = store.create(prefix + "q", b"{}")
        assert store.prefix_writes(prefix) == start + 1
        (updated, _, _) = store.update_and_create(
            [(prefix + "q", b'{"used":1}', rev)],
            [(prefix + "q2", b"{}"), ("/registry/pods/a/p2", b"{}")],
        )
        assert store.prefix_writes(prefix) == start + 3
        assert isinstance(updated, int) and store.prefix_revision(prefix) > updated
        store.delete(prefix + "q2", 0)
        assert store.prefix_writes(prefix) == start + 4
    finally:
        store.close()


def test_update_many_results_are_per_item(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "state.db")
    try:
        a = store.create("/k/a", b"1")
        b = store.create("/k/b", b"1")
        results = store.update_many([("/k/a", b"2", a), ("/k/b", b"2", b + 100), ("/k/c", b"2", 1)])
        assert isinstance(results[0], int) and store.get("/k/a").value == b"2"
        assert isinstance(results[1], RevisionMismatch) and store.get("/k/b").value == b"1"
        assert isinstance(results[2], KeyNotFound)
    finally:
        store.close()


def test_reads_share_a_few_connections(tmp_path: Path) -> None:
    """Each read connection keeps a page cache of its own: 40 reading
    threads (the API server runs more than 60) share READERS of them."""
    import threading

    from controlplane.storage import sqlite, sqlite_readers

    store = sqlite.SqliteStore(tmp_path / "db.sqlite")
    try:
        for i in range(20):
            store.create(f"/registry/pods/ns/p{i}", b"x" * 1000)
        barrier = threading.Barrier(40)
        seen: list[int] = []

        def read() -> None:
            barrier.wait()
            for _ in range(5):
                seen.append(len(store.range("/registry/pods/").items))
                store.get("/registry/pods/ns/p3")
                store.history(0, store.current_revision())

        threads = [threading.Thread(target=read) for _ in range(40)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert seen == [20] * 200
        assert 1 <= len(store._readers.made) <= sqlite_readers.READERS
    finally:
        store.close()
    with pytest.raises(StoreUnavailable):
        store.get("/registry/pods/ns/p3")
