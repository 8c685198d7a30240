"""The thread-safe indexed store behind every informer (client-go's cache.Indexer).

Objects are kept by key, `namespace/name` for namespaced objects and `name`
for cluster-scoped ones (`object_key()`), with indexes maintained on every
write: the namespace index always, plus any custom indexer (a function from
an object to the index values it files under, e.g. pods by `spec.nodeName`).
Readers get the stored dicts themselves, not copies: callers must treat
them as read-only and deep-copy before changing anything, as client-go asks.
The store never talks to the API server; reflectors and informers fill it.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from controlplane.client.interface import Object
from controlplane.client.selectors import Selector

IndexFunc = Callable[[Object], list[str]]

NAMESPACE_INDEX = "namespace"


def object_key(obj: Mapping[str, Any]) -> str:
    """`namespace/name`, or `name` for cluster-scoped objects."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    name = str(meta.get("name", ""))
    return f"{ns}/{name}" if ns else name


def split_key(key: str) -> tuple[str | None, str]:
    """The inverse of `object_key`: (namespace or None, name)."""
    ns, sep, name = key.partition("/")
    return (ns, name) if sep else (None, ns)


def namespace_index(obj: Object) -> list[str]:
    ns = (obj.get("metadata") or {}).get("namespace")
    return [ns] if ns else []


def pod_node_index(obj: Object) -> list[str]:
    """Index pods by the node they are bound to (`spec.nodeName`)."""
    node = (obj.get("spec") or {}).get("nodeName")
    return [node] if node else []


class UnknownIndex(KeyError):
    """An index name that was never registered."""


class Store:
    """A thread-safe map of key → object with secondary indexes."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._lock = threading.RLock()
        self._items: dict[str, Object] = {}
        self._indexers: dict[str, IndexFunc] = {NAMESPACE_INDEX: namespace_index}
        self._indexers.update(indexers or {})
        # index name -> index value -> set of keys
        self._indices: dict[str, dict[str, set[str]]] = {n: {} for n in self._indexers}

    # ---- indexes ---------------------------------------------------------

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Register more indexers; existing objects are indexed at once."""
        with self._lock:
            for name, func in indexers.items():
                if name in self._indexers:
                    raise ValueError(f"indexer {name!r} already exists")
                self._indexers[name] = func
                self._indices[name] = {}
                for key, obj in self._items.items():
                    for value in func(obj):
                        self._indices[name].setdefault(value, set()).add(key)

    def _unindex(self, key: str, obj: Object) -> None:
        for name, func in self._indexers.items():
            index = self._indices[name]
            for value in func(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]

    def _index(self, key: str, obj: Object) -> None:
        for name, func in self._indexers.items():
            for value in func(obj):
                self._indices[name].setdefault(value, set()).add(key)

    # ---- writes ------------------------------------------------------------

    def add(self, obj: Object) -> None:
        self.update(obj)

    def update(self, obj: Object) -> Object | None:
        """Store `obj` under its key; returns the object it replaced, if any."""
        key = object_key(obj)
        with self._lock:
            old = self._items.get(key)
            if old is not None:
                self._unindex(key, old)
            self._items[key] = obj
            self._index(key, obj)
            return old

    def delete(self, obj: Object) -> Object | None:
        return self.delete_key(object_key(obj))

    def delete_key(self, key: str) -> Object | None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._unindex(key, old)
            return old

    def replace(self, objs: Iterable[Object]) -> dict[str, Object]:
        """Swap the whole content; returns the previous content by key."""
        with self._lock:
            old = self._items
            self._items = {}
            self._indices = {n: {} for n in self._indexers}
            for obj in objs:
                key = object_key(obj)
                self._items[key] = obj
                self._index(key, obj)
            return old

    # ---- reads -------------------------------------------------------------

    def get_by_key(self, key: str) -> Object | None:
        with self._lock:
            return self._items.get(key)

    def get(self, name: str, namespace: str | None = None) -> Object | None:
        return self.get_by_key(f"{namespace}/{name}" if namespace else name)

    def keys(self) -> list[str]:
        with self._lock:
            return sorted(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def list(
        self, namespace: str | None = None, selector: Selector | None = None
    ) -> builtins.list[Object]:
        """Objects (sorted by key), optionally in one namespace and matching a selector."""
        with self._lock:
            if namespace:
                keys = sorted(self._indices[NAMESPACE_INDEX].get(namespace, ()))
            else:
                keys = sorted(self._items)
            objs = [self._items[k] for k in keys]
        if selector is not None:
            objs = [o for o in objs if selector.matches((o.get("metadata") or {}).get("labels"))]
        return objs

    def by_index(self, index: str, value: str) -> builtins.list[Object]:
        """Objects filed under `value` in the named index, sorted by key."""
        with self._lock:
            if index not in self._indices:
                raise UnknownIndex(index)
            return [self._items[k] for k in sorted(self._indices[index].get(value, ()))]

    def index_keys(self, index: str, value: str) -> builtins.list[str]:
        with self._lock:
            if index not in self._indices:
                raise UnknownIndex(index)
            return sorted(self._indices[index].get(value, ()))

    def index_values(self, index: str) -> builtins.list[str]:
        """Every value that has at least one object in the named index."""
        with self._lock:
            if index not in self._indices:
                raise UnknownIndex(index)
            return sorted(self._indices[index])
