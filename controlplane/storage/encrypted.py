"""A Store that encrypts the values of some key prefixes (encryption.py).

Every write under a configured prefix (the Secrets', by default the only
one) is encrypted before it reaches the store beneath; every value read
back, from get, range, scan, history or a watch, is decrypted wherever it
starts with Kubernetes' `k8s:enc:` marker, whatever its key (a scan pages
values without keys). The store beneath, its file or etcd, never holds a
Secret in the clear. Anything else (revisions, compaction, a store's own
extras such as prefix_revision) passes through unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from controlplane.storage.encryption import MAGIC, Transformer, decrypt
from controlplane.storage.interface import (
    Event,
    KeyValue,
    Range,
    ScanPage,
    StorageError,
    Store,
    StoreWatch,
)


class EncryptedStore:
    """See the module docstring."""

    def __init__(self, inner: Store, transformers: Mapping[str, Transformer]) -> None:
        self.inner = inner
        self.transformers = dict(transformers)
        self._readers = tuple(p for t in self.transformers.values() for p in t.providers)

    def __getattr__(self, name: str) -> Any:  # a store's extras (prefix_revision, ...)
        return getattr(self.inner, name)

    # -- writes ----------------------------------------------------------------------

    def _seal(self, key: str, value: bytes) -> bytes:
        for prefix, transformer in self.transformers.items():
            if key.startswith(prefix):
                return transformer.encrypt(value)
        return value

    def create(self, key: str, value: bytes) -> int:
        return self.inner.create(key, self._seal(key, value))

    def create_many(self, items: list[tuple[str, bytes]]) -> list[int | StorageError]:
        return self.inner.create_many([(k, self._seal(k, v)) for k, v in items])

    def update(self, key: str, value: bytes, expected_rev: int) -> int:
        return self.inner.update(key, self._seal(key, value), expected_rev)

    def update_many(self, items: list[tuple[str, bytes, int]]) -> list[int | StorageError]:
        return self.inner.update_many([(k, self._seal(k, v), r) for k, v, r in items])

    def update_and_create(
        self, updates: list[tuple[str, bytes, int]], creates: list[tuple[str, bytes]]
    ) -> list[int | StorageError]:
        return self.inner.update_and_create(
            [(k, self._seal(k, v), r) for k, v, r in updates],
            [(k, self._seal(k, v)) for k, v in creates],
        )

    def delete(self, key: str, expected_rev: int) -> int:
        return self.inner.delete(key, expected_rev)

    # -- reads -------------------------------------------------------------------------

    def _open(self, value: bytes) -> bytes:
        return decrypt(self._readers, value) if value.startswith(MAGIC) else value

    def _event(self, event: Event) -> Event:
        if not event.value.startswith(MAGIC) and not (event.prev_value or b"").startswith(MAGIC):
            return event
        prev = self._open(event.prev_value) if event.prev_value is not None else None
        return replace(event, value=self._open(event.value), prev_value=prev)

    def get(self, key: str) -> KeyValue:
        kv = self.inner.get(key)
        return kv._replace(value=self._open(kv.value)) if kv.value.startswith(MAGIC) else kv

    def range(self, prefix: str, start_after: str = "", limit: int = 0, rev: int = 0) -> Range:
        found = self.inner.range(prefix, start_after, limit, rev)
        if not any(kv.value.startswith(MAGIC) for kv in found.items):
            return found
        items = [kv._replace(value=self._open(kv.value)) for kv in found.items]
        return replace(found, items=items)

    def scan(self, prefix: str, page: int) -> Iterator[ScanPage]:
        for chunk in self.inner.scan(prefix, page):
            if any(v.startswith(MAGIC) for v, _ in chunk.items):
                chunk = replace(chunk, items=[(self._open(v), r) for v, r in chunk.items])
            yield chunk

    def history(self, after: int, upto: int, prefix: str = "") -> list[Event]:
        return [self._event(e) for e in self.inner.history(after, upto, prefix)]

    def watch(self, prefix: str, after: int) -> StoreWatch:
        return _Watch(self, self.inner.watch(prefix, after))

    def current_revision(self) -> int:
        return self.inner.current_revision()

    def compacted_revision(self) -> int:
        return self.inner.compacted_revision()

    def compact(self, rev: int) -> None:
        self.inner.compact(rev)

    def close(self) -> None:
        self.inner.close()


class _Watch:
    def __init__(self, store: EncryptedStore, inner: StoreWatch) -> None:
        self.store = store
        self.inner = inner

    def __iter__(self) -> Iterator[Event]:
        for event in self.inner:
            yield self.store._event(event)

    def close(self) -> None:
        self.inner.close()
