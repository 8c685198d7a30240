"""A Store that times every call to the store beneath (etcd_request_duration_seconds).

Each read and write is timed and handed to `observe(operation, type,
seconds)` with kube-apiserver's operation names (`create`, `get`, `list`,
`update`, `delete`, `history`, `compact`) and as type the resource the key
belongs to (its first segment under /registry/: `pods`, `deployments`), so
the series stay one per resource whatever the number of objects. Batched
writes are timed once per batch. Everything else, and a store's own extras
(prefix_revision, bulk_create), passes through unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from controlplane.storage.interface import (
    Event,
    KeyValue,
    Range,
    ScanPage,
    StorageError,
    Store,
    StoreWatch,
)

Observe = Callable[[str, str, float], None]
_ROOT = "/registry/"


def resource_of(key: str) -> str:
    """The resource a key or prefix belongs to: its segment under /registry/."""
    at = key.find(_ROOT)
    if at < 0:
        return ""
    rest = key[at + len(_ROOT) :]
    return rest.split("/", 1)[0]


class TimedStore:
    """See the module docstring."""

    def __init__(self, inner: Store, observe: Observe) -> None:
        self.inner = inner
        self.observe = observe

    def __getattr__(self, name: str) -> Any:  # a store's extras (prefix_revision, ...)
        return getattr(self.inner, name)

    def _timed(self, operation: str, key: str, call: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        try:
            return call()
        finally:
            self.observe(operation, resource_of(key), time.perf_counter() - start)

    def create(self, key: str, value: bytes) -> int:
        return int(self._timed("create", key, lambda: self.inner.create(key, value)))

    def create_many(self, items: list[tuple[str, bytes]]) -> list[int | StorageError]:
        key = items[0][0] if items else ""
        found: list[int | StorageError] = self._timed(
            "create", key, lambda: self.inner.create_many(items)
        )
        return found

    def get(self, key: str) -> KeyValue:
        found: KeyValue = self._timed("get", key, lambda: self.inner.get(key))
        return found

    def range(self, prefix: str, start_after: str = "", limit: int = 0, rev: int = 0) -> Range:
        found: Range = self._timed(
            "list", prefix, lambda: self.inner.range(prefix, start_after, limit, rev)
        )
        return found

    def scan(self, prefix: str, page: int) -> Iterator[ScanPage]:
        return self.inner.scan(prefix, page)

    def update(self, key: str, value: bytes, expected_rev: int) -> int:
        return int(self._timed("update", key, lambda: self.inner.update(key, value, expected_rev)))

    def update_many(self, items: list[tuple[str, bytes, int]]) -> list[int | StorageError]:
        key = items[0][0] if items else ""
        found: list[int | StorageError] = self._timed(
            "update", key, lambda: self.inner.update_many(items)
        )
        return found

    def update_and_create(
        self, updates: list[tuple[str, bytes, int]], creates: list[tuple[str, bytes]]
    ) -> list[int | StorageError]:
        """Timed once, as a create of the first created key's resource (the
        updates ride along with it), or as an update when nothing is created."""
        operation, key = ("create", creates[0][0]) if creates else ("update", "")
        if not creates and updates:
            key = updates[0][0]
        found: list[int | StorageError] = self._timed(
            operation, key, lambda: self.inner.update_and_create(updates, creates)
        )
        return found

    def delete(self, key: str, expected_rev: int) -> int:
        return int(self._timed("delete", key, lambda: self.inner.delete(key, expected_rev)))

    def current_revision(self) -> int:
        return self.inner.current_revision()

    def history(self, after: int, upto: int, prefix: str = "") -> list[Event]:
        found: list[Event] = self._timed(
            "history", prefix, lambda: self.inner.history(after, upto, prefix)
        )
        return found

    def watch(self, prefix: str, after: int) -> StoreWatch:
        return self.inner.watch(prefix, after)

    def compacted_revision(self) -> int:
        return self.inner.compacted_revision()

    def compact(self, rev: int) -> None:
        self._timed("compact", "", lambda: self.inner.compact(rev))

    def close(self) -> None:
        self.inner.close()
