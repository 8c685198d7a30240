"""The SQLite store's read connections: a few, shared, each lent for one read.

Each connection keeps its own SQLite page cache (up to 2 MB): a connection
per reading thread gave each of the API server's threads (over sixty in
`skiff up` at rest) a cache the process kept for its life. Reads are short
(one statement or one snapshot, never a stream), so a read waits for a free
connection when all READERS are lent out.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from controlplane.storage.interface import StoreUnavailable

READERS = max(4, 2 * (os.cpu_count() or 1))


class ReaderPool:
    """Thread-safe."""

    def __init__(self, path: Path, size: int = READERS) -> None:
        self.path = path
        self.size = size
        self.made: list[sqlite3.Connection] = []  # every read connection made
        self._free: list[sqlite3.Connection] = []  # those not lent out
        self._returned = threading.Condition()
        self._closed = False

    @contextlib.contextmanager
    def lend(self) -> Iterator[sqlite3.Connection]:
        """A read connection for one read, then back to the others;
        StoreUnavailable once closed."""
        with self._returned:
            while True:
                if self._closed:
                    raise StoreUnavailable("store is closed")
                if self._free:
                    conn = self._free.pop()
                    break
                if len(self.made) < self.size:
                    conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                    conn.execute("PRAGMA query_only=1")
                    self.made.append(conn)
                    break
                self._returned.wait()
        try:
            yield conn
        finally:
            with self._returned:
                self._free.append(conn)
                self._returned.notify()

    def close(self) -> None:
        """Close every connection (one still lent out is closed with the
        process); a read waiting for one gets StoreUnavailable."""
        with self._returned:
            self._closed = True
            made, self.made, self._free = self.made, [], []
            self._returned.notify_all()
        for conn in made:
            try:
                conn.close()
            except sqlite3.Error:
                pass  # in use by a thread that is finishing
