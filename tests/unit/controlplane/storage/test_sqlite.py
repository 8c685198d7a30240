"""SQLite-only behaviour: durability across reopen, refusal of damaged files."""

from __future__ import annotations

from pathlib import Path

import pytest

from controlplane.storage.interface import CorruptStore
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
