"""The embedded store: one SQLite file in WAL mode with group commit.

Every write goes to one writer thread. It takes all writes queued while the
previous batch was being made durable, applies them in one transaction (each
write checks its own precondition, so one failed compare-and-swap does not
fail the batch), commits with `synchronous=FULL` (an fsync of the WAL per
commit), and only then acknowledges each write and publishes its event to
the watchers. So many requests share one fsync, and no write is acknowledged
before it is on disk.

Tables: `objects` (current state), `history` (one row per write, trimmed to
the newest `retention` revisions, used to resume watches), `meta`
(revision, compacted revision, schema marker).

The writes are operations run inside the writer's transaction
(sqlite_ops.py). Reads share a few connections, each lent for one read
(sqlite_readers.py).

At open, a file that is not a SQLite database, is empty, fails
`PRAGMA quick_check` or lacks our schema raises CorruptStore: the store never
silently starts over on damaged data. This module must never be used by two
processes at once on the same file (the control plane owns it).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from controlplane.storage import sqlite_ops as ops
from controlplane.storage.interface import (
    Compacted,
    CorruptStore,
    Event,
    EventType,
    KeyExists,
    KeyNotFound,
    KeyValue,
    Range,
    ScanPage,
    StorageError,
    StoreUnavailable,
    prefix_end,
)
from controlplane.storage.sqlite_ops import Op
from controlplane.storage.sqlite_readers import ReaderPool

log = logging.getLogger(__name__)

SCHEMA_MARKER = "skiff-controlplane-v1"
SQLITE_HEADER = b"SQLite format 3\x00"
CHECKPOINT_EVERY = 200  # commits between checkpoints (SQLite's own default: 1000 WAL pages)

_SCHEMA = """
CREATE TABLE objects (
    key TEXT PRIMARY KEY,
    value BLOB NOT NULL,
    create_rev INTEGER NOT NULL,
    mod_rev INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE history (
    rev INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    type INTEGER NOT NULL,
    value BLOB NOT NULL,
    prev BLOB
);
CREATE TABLE meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
"""


class _Request:
    """One op for the writer, and its outcome once durable. The asker blocks
    on a lock the writer releases when the outcome is in: C each way, where
    a concurrent.futures.Future notifies a Python condition (a few per cent
    of a busy server's CPU, one per write)."""

    __slots__ = ("_done", "_error", "_result", "op")

    def __init__(self, op: Op) -> None:
        self.op = op
        self._result: Any = None
        self._error: BaseException | None = None
        self._done = threading.Lock()
        self._done.acquire()

    def set_result(self, result: Any) -> None:
        self._result = result
        self._done.release()

    def set_exception(self, err: BaseException) -> None:
        self._error = err
        self._done.release()

    def result(self) -> Any:
        """The outcome, once the writer has set it (an exception raised)."""
        self._done.acquire()
        if self._error is not None:
            raise self._error
        return self._result


class _SqliteWatch:
    """Replays history after a revision, then follows live events."""

    def __init__(self, store: SqliteStore, prefix: str, backlog: list[Event], live_after: int):
        self._store = store
        self._prefix = prefix
        self._backlog = backlog
        self._live_after = live_after
        self._queue: queue.SimpleQueue[Event | None] = queue.SimpleQueue()
        self._closed = False

    def push(self, event: Event) -> None:
        if event.key.startswith(self._prefix):
            self._queue.put(event)

    def __iter__(self) -> Iterator[Event]:
        yield from self._backlog
        self._backlog = []
        while not self._closed:
            event = self._queue.get()
            if event is None:
                return
            if event.rev > self._live_after:
                yield event

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._store._unwatch(self)
            self._queue.put(None)


class SqliteStore:
    """See the module docstring. Thread-safe."""

    def __init__(self, path: Path, retention: int = 100_000, max_batch: int = 2000) -> None:
        self.path = Path(path)
        self.retention = retention
        self.max_batch = max_batch
        existed = self.path.exists()
        if existed:
            self._check_header()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Every Secret is in this file: 0600 from its creation (SQLite gives its
        # -wal and -shm files the database file's mode), and an older 0644 one is
        # narrowed.
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        os.chmod(self.path, 0o600)
        for extra in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.chmod(f"{self.path}{extra}", 0o600)
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            if existed:
                self._check_integrity()
            else:
                self._db.executescript(_SCHEMA)
                self._db.execute("BEGIN")
                self._db.executemany(
                    "INSERT INTO meta (k, v) VALUES (?, ?)",
                    [("schema", SCHEMA_MARKER), ("revision", "0"), ("compacted", "0")],
                )
                self._db.execute("COMMIT")
            meta = dict(self._db.execute("SELECT k, v FROM meta").fetchall())
        except sqlite3.DatabaseError as err:
            raise CorruptStore(
                f"{self.path}: the database is damaged ({err}); refusing to start. "
                "Restore it from a backup or move it away to start an empty cluster."
            ) from err
        self._rev = int(meta["revision"])
        self._compacted = int(meta["compacted"])
        self._published = self._rev
        self._queue: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        self._readers = ReaderPool(self.path)
        self._watch_lock = threading.Lock()
        self._watches: list[_SqliteWatch] = []
        self._closed = False
        # Checkpoints (copying the WAL into the database file, two more fsyncs)
        # run on their own connection and thread, never inside a commit that
        # writers are waiting for.
        self._db.execute("PRAGMA wal_autocheckpoint=0")
        self._unchecked = 0  # commits since the last checkpoint was asked for
        self._checkpoint_wanted = threading.Event()
        self._stamps: dict[str, int] = {}  # prefix -> revision of its last write
        self._writes: dict[str, int] = {}  # prefix -> events under it since it was tracked
        self._checkpointer = threading.Thread(
            target=self._checkpoint_loop, name="sqlite-checkpoint", daemon=True
        )
        self._checkpointer.start()
        self._writer = threading.Thread(target=self._write_loop, name="sqlite-writer", daemon=True)
        self._writer.start()

    # -- opening ------------------------------------------------------------

    def _check_header(self) -> None:
        try:
            with self.path.open("rb") as f:
                header = f.read(len(SQLITE_HEADER))
        except OSError as err:
            raise CorruptStore(f"{self.path}: cannot read the database: {err}") from err
        if header != SQLITE_HEADER:
            what = "is empty (truncated)" if not header else "is not a SQLite database"
            raise CorruptStore(
                f"{self.path} {what}; refusing to start. Restore it from a backup "
                "or move it away to start an empty cluster."
            )

    def _check_integrity(self) -> None:
        rows = self._db.execute("PRAGMA quick_check").fetchall()
        if [r[0] for r in rows] != ["ok"]:
            detail = "; ".join(str(r[0]) for r in rows[:5])
            raise CorruptStore(
                f"{self.path} failed its integrity check ({detail}); refusing to start. "
                "Restore it from a backup or move it away to start an empty cluster."
            )
        tables = {
            r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        if not {"objects", "history", "meta"} <= tables:
            raise CorruptStore(
                f"{self.path} is not a skiff control-plane database (tables missing); "
                "refusing to start."
            )
        marker = self._db.execute("SELECT v FROM meta WHERE k='schema'").fetchone()
        if marker is None or marker[0] != SCHEMA_MARKER:
            raise CorruptStore(f"{self.path}: unknown schema {marker!r}; refusing to start.")

    # -- writes ---------------------------------------------------------------

    def _ask(self, op: Op) -> Any:
        """Run op in the writer's next transaction; its result once durable."""
        if self._closed:
            raise StoreUnavailable("store is closed")
        request = _Request(op)
        self._queue.put(request)
        return request.result()

    def _submit(self, op: Op) -> int:
        return int(self._ask(op))

    def _write_loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < self.max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                batch.append(item)
            self._commit_batch(batch)
            if stop:
                return

    def _checkpoint_loop(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            while True:
                self._checkpoint_wanted.wait()
                self._checkpoint_wanted.clear()
                if self._closed:
                    return
                try:
                    # PASSIVE: copies what it can without blocking writers or readers.
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as err:
                    log.warning("sqlite checkpoint failed: %s", err)
        finally:
            conn.close()

    def _commit_batch(self, batch: list[_Request]) -> None:
        cur = self._db.cursor()
        rev = self._rev
        results: list[int | BaseException] = []
        events: list[Event] = []
        try:
            cur.execute("BEGIN IMMEDIATE")
            for request in batch:
                # Each op checks its precondition before writing anything, so a
                # failed op leaves nothing behind and needs no savepoint.
                try:
                    result, written = request.op(cur, rev + 1)
                except StorageError as err:
                    results.append(err)
                    continue
                rev += len(written)
                events.extend(written)
                results.append(result)
            compacted = self._compacted
            if rev - compacted > self.retention + self.retention // 10:
                compacted = rev - self.retention
                cur.execute("DELETE FROM history WHERE rev <= ?", (compacted,))
                cur.execute("UPDATE meta SET v=? WHERE k='compacted'", (str(compacted),))
            cur.execute("UPDATE meta SET v=? WHERE k='revision'", (str(rev),))
            cur.execute("COMMIT")
        except sqlite3.Error as err:
            log.error("sqlite commit failed: %s", err)
            try:
                cur.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            for request in batch:
                request.set_exception(StoreUnavailable(f"write not durable: {err}"))
            return
        self._rev = rev
        self._compacted = compacted
        if self._stamps:
            for prefix in tuple(self._stamps):
                for event in events:
                    if event.key.startswith(prefix):
                        self._stamps[prefix] = event.rev
                        self._writes[prefix] = self._writes.get(prefix, 0) + 1
        self._unchecked += 1
        if self._unchecked >= CHECKPOINT_EVERY:
            self._unchecked = 0
            self._checkpoint_wanted.set()
        for request, outcome in zip(batch, results, strict=True):
            if isinstance(outcome, BaseException):
                request.set_exception(outcome)
            else:
                request.set_result(outcome)
        with self._watch_lock:
            self._published = rev
            for watch in self._watches:
                for event in events:
                    watch.push(event)

    def create(self, key: str, value: bytes) -> int:
        return self._submit(ops.create(key, value))

    def create_many(self, items: list[tuple[str, bytes]]) -> list[int | StorageError]:
        """Independent creates queued together, so they share one commit."""
        return self._submit_many([ops.create(k, v) for k, v in items])

    def update(self, key: str, value: bytes, expected_rev: int) -> int:
        return self._submit(ops.update(key, value, expected_rev))

    def update_many(self, items: list[tuple[str, bytes, int]]) -> list[int | StorageError]:
        """Independent compare-and-swaps queued together, so they share one commit.

        Each succeeds or fails on its own; results in order (revision or error).
        """
        return self._submit_many([ops.update(k, v, r) for k, v, r in items])

    def update_and_create(
        self, updates: list[tuple[str, bytes, int]], creates: list[tuple[str, bytes]]
    ) -> list[int | StorageError]:
        """All or nothing, in one transaction (interface.Store.update_and_create)."""
        results: list[int | StorageError] = self._ask(ops.update_and_create(updates, creates))
        return results

    def _submit_many(self, each: list[Op]) -> list[int | StorageError]:
        """Independent ops as one request: one outcome, one place in one commit."""

        def many(cur: sqlite3.Cursor, rev: int) -> tuple[list[int | StorageError], list[Event]]:
            results: list[int | StorageError] = []
            events: list[Event] = []
            for op in each:
                try:
                    result, written = op(cur, rev + len(events))
                except StorageError as err:
                    results.append(err)
                    continue
                results.append(result)
                events.extend(written)
            return results, events

        results: list[int | StorageError] = self._ask(many)
        return results

    def delete(self, key: str, expected_rev: int) -> int:
        return self._submit(ops.delete(key, expected_rev))

    def bulk_create(self, items: list[tuple[str, bytes]]) -> int:
        """Create many keys in one transaction (loading, benchmarks); all or nothing."""

        def op(cur: sqlite3.Cursor, rev: int) -> tuple[int, list[Event]]:
            for key, _ in items:
                if cur.execute("SELECT 1 FROM objects WHERE key=?", (key,)).fetchone():
                    raise KeyExists(key)
            rows = [(key, value, rev + i, rev + i) for i, (key, value) in enumerate(items)]
            cur.executemany("INSERT INTO objects VALUES (?, ?, ?, ?)", rows)
            cur.executemany(
                "INSERT INTO history VALUES (?, ?, ?, ?, NULL)",
                [(r[2], r[0], EventType.CREATE.value, r[1]) for r in rows],
            )
            return rev + len(items) - 1, [
                Event(EventType.CREATE, key, value, r) for key, value, r, _ in rows
            ]

        if not items:
            return self._rev
        return self._submit(op)

    # -- reads ----------------------------------------------------------------

    def get(self, key: str) -> KeyValue:
        with self._readers.lend() as conn:
            row = conn.execute(
                "SELECT value, mod_rev, create_rev FROM objects WHERE key=?", (key,)
            ).fetchone()
        if row is None:
            raise KeyNotFound(key)
        return KeyValue(key, row[0], row[1], row[2])

    def range(self, prefix: str, start_after: str = "", limit: int = 0, rev: int = 0) -> Range:
        low = max(prefix, start_after)
        sql = "SELECT key, value, mod_rev, create_rev FROM objects WHERE key >= ? AND key < ?"
        params: list[object] = [low, prefix_end(prefix)]
        if start_after and start_after >= prefix:
            sql = sql.replace("key >= ?", "key > ?")
        sql += " ORDER BY key"
        if limit > 0:
            sql += " LIMIT ?"
            params.append(limit + 1)
        with self._readers.lend() as conn:
            conn.execute("BEGIN")
            try:
                current = int(conn.execute("SELECT v FROM meta WHERE k='revision'").fetchone()[0])
                rows = conn.execute(sql, params).fetchall()
            finally:
                conn.execute("COMMIT")
        more = limit > 0 and len(rows) > limit
        if more:
            rows = rows[:limit]
        make = KeyValue._make
        return Range([make(r) for r in rows], current, more)

    def scan(self, prefix: str, page: int) -> Iterator[ScanPage]:
        # Its own connection, so the read transaction (the snapshot) lives
        # exactly as long as the iterator, on whichever thread drives it.
        if self._closed:
            raise StoreUnavailable("store is closed")
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA query_only=1")
            conn.execute("BEGIN")
            current = int(conn.execute("SELECT v FROM meta WHERE k='revision'").fetchone()[0])
            cur = conn.execute(
                "SELECT value, mod_rev FROM objects WHERE key >= ? AND key < ? ORDER BY key",
                (prefix, prefix_end(prefix)),
            )
            while True:
                rows = cur.fetchmany(page)
                more = len(rows) == page
                yield ScanPage(rows, current, more)
                if not more:
                    return
        finally:
            conn.close()  # ends the read transaction

    def current_revision(self) -> int:
        return self._rev

    def prefix_revision(self, prefix: str) -> int:
        """A revision at or after the last write under prefix, without I/O.

        Exact because this process is the only writer of the file: it is
        updated when a commit is durable, before the write is acknowledged. So
        something read after seeing a value here is at least that new, and a
        caller may keep a decoded copy for as long as the value stays the same.
        The first call for a prefix starts tracking it (and answers the current
        revision).
        """
        stamp = self._stamps.get(prefix)
        if stamp is None:
            self._writes.setdefault(prefix, 0)
            stamp = self._stamps.setdefault(prefix, self._rev)
        return stamp

    def prefix_writes(self, prefix: str) -> int:
        """How many writes (events) under prefix this store has made durable
        since it first tracked it, without I/O; moves as prefix_revision does.

        Where prefix_revision tells that something was written, this tells how
        much: a caller that read the prefix when it stood at n and then wrote k
        keys under it itself knows, seeing n + k, that nobody else wrote there
        in between (the quota admission keeps the quotas it charged so).
        """
        self.prefix_revision(prefix)  # tracked from here on
        return self._writes.get(prefix, 0)

    def compacted_revision(self) -> int:
        return self._compacted

    def compact(self, rev: int) -> None:
        def op(cur: sqlite3.Cursor, _rev: int) -> tuple[int, list[Event]]:
            cur.execute("DELETE FROM history WHERE rev <= ?", (rev,))
            cur.execute("UPDATE meta SET v=? WHERE k='compacted'", (str(rev),))
            return rev, []

        if rev > self._compacted:
            self._submit(op)
            self._compacted = max(self._compacted, rev)

    def history(self, after: int, upto: int, prefix: str = "") -> list[Event]:
        with self._readers.lend() as conn:
            conn.execute("BEGIN")
            try:
                compacted = int(
                    conn.execute("SELECT v FROM meta WHERE k='compacted'").fetchone()[0]
                )
                if after < compacted:
                    raise Compacted(after, compacted)
                if prefix:
                    rows = conn.execute(
                        "SELECT rev, key, type, value, prev FROM history "
                        "WHERE rev > ? AND rev <= ? AND key >= ? AND key < ? ORDER BY rev",
                        (after, upto, prefix, prefix_end(prefix)),
                    ).fetchall()
                else:
                    rows = conn.execute(
                        "SELECT rev, key, type, value, prev FROM history "
                        "WHERE rev > ? AND rev <= ? ORDER BY rev",
                        (after, upto),
                    ).fetchall()
            finally:
                conn.execute("COMMIT")
        return [Event(EventType(r[2]), r[1], r[3], r[0], r[4]) for r in rows]

    def watch(self, prefix: str, after: int) -> _SqliteWatch:
        if after < self._compacted:
            raise Compacted(after, self._compacted)
        with self._watch_lock:
            live_after = self._published
            watch = _SqliteWatch(self, prefix, [], max(live_after, after))
            self._watches.append(watch)
        if after < live_after:
            try:
                watch._backlog = self.history(after, live_after, prefix)
            except Compacted:
                watch.close()
                raise
        return watch

    def _unwatch(self, watch: _SqliteWatch) -> None:
        with self._watch_lock:
            if watch in self._watches:
                self._watches.remove(watch)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._writer.join()
        self._checkpoint_wanted.set()
        self._checkpointer.join()
        while True:
            try:
                left = self._queue.get_nowait()
            except queue.Empty:
                break
            if left is not None:
                left.set_exception(StoreUnavailable("store is closed"))
        with self._watch_lock:
            watches = list(self._watches)
        for watch in watches:
            watch.close()
        self._readers.close()
        self._db.close()
