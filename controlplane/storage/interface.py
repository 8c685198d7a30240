"""The storage contract under the API server: a revisioned key-value store.

Keys are strings (`/registry/pods/default/web-1`), values opaque bytes (the
object's JSON without its resourceVersion). Every successful write gets the
next value of one global, monotonically increasing revision; the object's
resourceVersion is the revision of its last write (`mod_rev`). History of
writes is kept for a while so a watch can resume from an older revision;
asking for a revision older than the retained history raises `Compacted`.

Two implementations behave identically (one test suite runs against both):
`sqlite.SqliteStore` (embedded, group commit) and `etcd.EtcdStore`. This
module must never know about kinds, JSON or gRPC status codes: the API server
maps these exceptions to its own errors.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple, Protocol


class StorageError(Exception):
    """Base of storage failures."""


class KeyExists(StorageError):
    """create() of a key that exists."""


class KeyNotFound(StorageError):
    """The key does not exist (get, update, delete)."""


class RevisionMismatch(StorageError):
    """Compare-and-swap failed: the key's mod_rev is not the expected one."""

    def __init__(self, key: str, current: int) -> None:
        super().__init__(f"{key}: modified concurrently (current revision {current})")
        self.key = key
        self.current = current


class Compacted(StorageError):
    """The requested revision is older than the retained history."""

    def __init__(self, requested: int, compacted: int) -> None:
        super().__init__(
            f"revision {requested} is older than the retained history (compacted at {compacted})"
        )
        self.requested = requested
        self.compacted = compacted


class StoreUnavailable(StorageError):
    """The backend cannot be reached or failed to make a write durable."""


class CorruptStore(StorageError):
    """The data on disk is damaged; the store refuses to open."""


class EventType(Enum):
    CREATE = 0
    UPDATE = 1
    DELETE = 2


class KeyValue(NamedTuple):
    """A stored key (a tuple, so a range of 100,000 keys is cheap to build)."""

    key: str
    value: bytes
    mod_rev: int
    create_rev: int = 0


@dataclass(frozen=True)
class Event:
    """One write. For DELETE, `value` is the last value and `rev` the deletion revision."""

    type: EventType
    key: str
    value: bytes
    rev: int
    prev_value: bytes | None = None


@dataclass(frozen=True)
class Range:
    items: list[KeyValue]
    rev: int  # the store revision the range was read at
    more: bool = False


@dataclass(frozen=True)
class ScanPage:
    """A page of a scan: (value, mod_rev) pairs, in key order (plain tuples: a
    100,000-key scan builds no per-key objects beyond what the database returns)."""

    items: list[tuple[bytes, int]]
    rev: int  # the snapshot's revision, the same for every page of one scan
    more: bool = False


class StoreWatch(Protocol):
    """A stream of every event under a prefix after a revision, in order."""

    def __iter__(self) -> Iterator[Event]: ...

    def close(self) -> None: ...


class Store(Protocol):
    def create(self, key: str, value: bytes) -> int:
        """Write a new key; returns its revision. KeyExists if present."""
        ...

    def create_many(self, items: list[tuple[str, bytes]]) -> list[int | StorageError]:
        """Many independent create()s of (key, value); each succeeds or fails on its
        own (its revision or its StorageError, in order). A store may make them
        durable together (SQLite: one group commit)."""
        ...

    def get(self, key: str) -> KeyValue:
        """KeyNotFound if absent."""
        ...

    def range(self, prefix: str, start_after: str = "", limit: int = 0, rev: int = 0) -> Range:
        """Keys under prefix, ordered, strictly after start_after, at most limit (0: all).

        rev=0 reads the latest state; rev>0 asks for a consistent read at that
        revision, which a store may honour (etcd) or serve from the latest state
        (SQLite); Compacted if the store honours it and it is gone.
        """
        ...

    def scan(self, prefix: str, page: int) -> Iterator[ScanPage]:
        """The values of every key under prefix, in key order, in pages of at most
        `page`, all read at one revision (a consistent snapshot), produced as the
        reader asks for them: a big List is sent while it is still being read.
        Close the iterator (or exhaust it) to release the snapshot."""
        ...

    def update(self, key: str, value: bytes, expected_rev: int) -> int:
        """Compare-and-swap: write only if the key's mod_rev is expected_rev.

        Returns the new revision. KeyNotFound / RevisionMismatch otherwise.
        """
        ...

    def update_many(self, items: list[tuple[str, bytes, int]]) -> list[int | StorageError]:
        """Many independent update()s of (key, value, expected_rev); each succeeds or
        fails on its own (its revision or its StorageError, in order). A store may
        make them durable together (SQLite: one group commit)."""
        ...

    def update_and_create(
        self, updates: list[tuple[str, bytes, int]], creates: list[tuple[str, bytes]]
    ) -> list[int | StorageError]:
        """Compare-and-swap every (key, value, expected_rev) of `updates` and create
        every (key, value) of `creates`, all or nothing: when an update's key is
        gone or moved (KeyNotFound, RevisionMismatch) or a create's key exists or
        comes twice (KeyExists), that is raised and nothing is written. Otherwise
        the updates are written first, and the updates' new revisions then the
        creates' results are returned, in order. SQLite makes them durable in one
        transaction. etcd gives every key of one Txn the same revision, so it
        writes the updates in one Txn that also checks the creates' keys are
        free, then the creates; a create that loses a race in between is
        returned as its KeyExists after the updates were written."""
        ...

    def delete(self, key: str, expected_rev: int) -> int:
        """Compare-and-delete; returns the deletion revision."""
        ...

    def current_revision(self) -> int: ...

    def history(self, after: int, upto: int, prefix: str = "") -> list[Event]:
        """Events with after < rev <= upto, in order; Compacted if after is too old."""
        ...

    def watch(self, prefix: str, after: int) -> StoreWatch:
        """Events with rev > after, live, in order; Compacted if after is too old."""
        ...

    def compacted_revision(self) -> int: ...

    def compact(self, rev: int) -> None:
        """Drop the history at and before rev: watches must start after it."""
        ...

    def close(self) -> None: ...


def prefix_end(prefix: str) -> str:
    """The smallest string greater than every string starting with prefix."""
    if not prefix:
        return ""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)
