"""The writes of the SQLite store, as operations its writer thread runs
inside one transaction (sqlite.py's group commit).

An operation takes (cursor, the next revision) and returns (its result, the
events it wrote, which used revisions next, next+1, ...). It checks every
precondition of its own before writing anything (update_and_create's
creates: takes out what it inserted) and raises StorageError when one
fails, so a failed operation leaves nothing behind and the other
operations of the transaction go on without a savepoint.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from controlplane.storage.interface import (
    Event,
    EventType,
    KeyExists,
    KeyNotFound,
    RevisionMismatch,
    StorageError,
)

Op = Callable[[sqlite3.Cursor, int], tuple[Any, list[Event]]]


def create(key: str, value: bytes) -> Op:
    def op(cur: sqlite3.Cursor, rev: int) -> tuple[int, list[Event]]:
        try:
            cur.execute("INSERT INTO objects VALUES (?, ?, ?, ?)", (key, value, rev, rev))
        except sqlite3.IntegrityError as err:  # the key (primary key) exists
            raise KeyExists(key) from err
        cur.execute(
            "INSERT INTO history VALUES (?, ?, ?, ?, NULL)",
            (rev, key, EventType.CREATE.value, value),
        )
        return rev, [Event(EventType.CREATE, key, value, rev)]

    return op


def _current(cur: sqlite3.Cursor, key: str, expected_rev: int) -> bytes:
    """The key's value, if its mod_rev is expected_rev (0: any)."""
    row = cur.execute("SELECT value, mod_rev FROM objects WHERE key=?", (key,)).fetchone()
    if row is None:
        raise KeyNotFound(key)
    prev: bytes = row[0]
    if expected_rev and row[1] != expected_rev:
        raise RevisionMismatch(key, row[1])
    return prev


def update(key: str, value: bytes, expected_rev: int) -> Op:
    def op(cur: sqlite3.Cursor, rev: int) -> tuple[int, list[Event]]:
        return _replace(cur, rev, key, value, _current(cur, key, expected_rev or -1))

    return op


def _replace(
    cur: sqlite3.Cursor, rev: int, key: str, value: bytes, prev: bytes
) -> tuple[int, list[Event]]:
    """Write `value` over `prev` (checked to be the key's current value)."""
    cur.execute("UPDATE objects SET value=?, mod_rev=? WHERE key=?", (value, rev, key))
    cur.execute(
        "INSERT INTO history VALUES (?, ?, ?, ?, ?)",
        (rev, key, EventType.UPDATE.value, value, prev),
    )
    return rev, [Event(EventType.UPDATE, key, value, rev, prev)]


def delete(key: str, expected_rev: int) -> Op:
    def op(cur: sqlite3.Cursor, rev: int) -> tuple[int, list[Event]]:
        prev = _current(cur, key, expected_rev)
        cur.execute("DELETE FROM objects WHERE key=?", (key,))
        cur.execute(
            "INSERT INTO history VALUES (?, ?, ?, ?, ?)",
            (rev, key, EventType.DELETE.value, prev, prev),
        )
        return rev, [Event(EventType.DELETE, key, prev, rev, prev)]

    return op


def update_and_create(
    updates: list[tuple[str, bytes, int]], creates: list[tuple[str, bytes]]
) -> Op:
    """Compare-and-swaps and creates, all or nothing (Store.update_and_create).

    The updates' preconditions are checked first. The creates' rows go in
    together, each insert its own check that the key is free (as `create`'s),
    so a batch costs no lookup per create; when a key is taken, the rows this
    operation inserted (their create revision is one of its own) are taken
    out again and KeyExists names the first key taken, so nothing is left."""

    def op(cur: sqlite3.Cursor, rev: int) -> tuple[list[int | StorageError], list[Event]]:
        prevs = [_current(cur, key, expected_rev or -1) for key, _, expected_rev in updates]
        first = rev + len(updates)  # the creates' revisions follow the updates'
        rows = [(key, value, first + i, first + i) for i, (key, value) in enumerate(creates)]
        seen: set[str] = set()
        for key, _ in creates:
            if key in seen:
                raise KeyExists(key)
            seen.add(key)
        try:
            cur.executemany("INSERT INTO objects VALUES (?, ?, ?, ?)", rows)
        except sqlite3.IntegrityError as err:
            cur.executemany(
                "DELETE FROM objects WHERE key=? AND create_rev=?", [(r[0], r[2]) for r in rows]
            )
            find = "SELECT 1 FROM objects WHERE key=?"
            taken = [k for k, _ in creates if cur.execute(find, (k,)).fetchone()]
            raise KeyExists(taken[0] if taken else str(err)) from err
        events: list[Event] = []
        results: list[int | StorageError] = []
        last: dict[str, bytes] = {}  # a key updated twice: the second replaces the first
        for (key, value, _), prev in zip(updates, prevs, strict=True):
            updated, written = _replace(cur, rev + len(events), key, value, last.get(key, prev))
            last[key] = value
            results.append(updated)
            events += written
        cur.executemany(
            "INSERT INTO history VALUES (?, ?, ?, ?, NULL)",
            [(r[2], r[0], EventType.CREATE.value, r[1]) for r in rows],
        )
        results += [r[2] for r in rows]
        events += [Event(EventType.CREATE, r[0], r[1], r[2]) for r in rows]
        return results, events

    return op
