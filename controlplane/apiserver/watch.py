"""Watch fan-out: one store watch feeds every API watcher.

The broadcaster follows the store from the revision it started at and hands
each event to the watchers of that kind (indexed by key prefix). A watcher
from an older resourceVersion first replays the store's history between that
version and what the broadcaster has dispatched, then continues live, so
events arrive exactly once and in resourceVersion order; a version older than
the retained history raises Gone ("too old, relist").

Every watcher has its own bounded queue. Dispatch never blocks: a watcher
whose queue is full is dropped (its stream ends; the client re-watches from
the last resourceVersion it saw), so a slow watcher never holds up writers
or other watchers. Selectors are evaluated on both the old and new object,
so an object that starts or stops matching arrives as ADDED or DELETED, as
Kubernetes does. Watchers selecting exactly on a pod's node
(`spec.nodeName=NODE`, each agent's; `spec.nodeName!=NODE`, `!=` alone being
the bound pods) are grouped by that node, and the broadcaster remembers
each pod's last node: an event reaches only the groups its old or new node
concerns, with its type told from the two nodes, never decoding the
previous object. Idle watchers get BOOKMARK events carrying the latest
dispatched revision.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from controlplane.api.kinds import KindInfo
from controlplane.api.selectors import field_value
from controlplane.apiserver.codec import ROOT, decode, encode, kind_prefix, list_prefix
from controlplane.apiserver.listing import Selectors
from controlplane.client.errors import Gone, Unavailable
from controlplane.storage.interface import Compacted, Event, EventType, StorageError, Store

log = logging.getLogger(__name__)


@dataclass(eq=False)
class WatchItem:
    """What a watcher delivers. For BOOKMARK, data is empty.

    One item is shared by every watcher that gets the same event as the same
    type, so the transport can build its message once (`wire` caches it).
    """

    type: str  # ADDED, MODIFIED, DELETED, BOOKMARK
    data: bytes
    rev: int
    wire: Any = None  # the gRPC message, built once
    line: bytes | None = None  # the REST watch event line, built once
    frame: tuple[str, bytes] | None = None  # the REST protobuf watch frame (its group/version)


class _Dispatch:
    """One store event with its decoded objects computed at most once."""

    __slots__ = ("_items", "_new", "_old", "event")

    def __init__(self, event: Event) -> None:
        self.event = event
        self._new: dict[str, Any] | None = None
        self._old: dict[str, Any] | None = None
        self._items: dict[str, WatchItem] = {}

    def item(self, kind: str, lean: bool = False) -> WatchItem:
        """The shared WatchItem of this event delivered as `kind`; `lean`:
        the object without metadata.managedFields (built once per event)."""
        key = f"{kind}/lean" if lean else kind
        found = self._items.get(key)
        if found is None:
            data = self._lean_value() if lean else self.event.value
            found = WatchItem(kind, data, self.event.rev)
            self._items[key] = found
        return found

    def _lean_value(self) -> bytes:
        value = self.event.value
        if _MANAGED_FIELDS not in value:
            return value
        obj = self.new()
        metadata = obj.get("metadata")
        if not isinstance(metadata, dict) or "managedFields" not in metadata:
            return value
        lean = {k: v for k, v in metadata.items() if k != "managedFields"}
        return encode({**obj, "metadata": lean})

    def new(self) -> dict[str, Any]:
        if self._new is None:
            self._new = decode(self.event.value)
        return self._new

    def old(self) -> dict[str, Any] | None:
        if self.event.prev_value is None:
            return None
        if self._old is None:
            self._old = decode(self.event.prev_value)
        return self._old


# A listener that may read the event's new object (Broadcaster.add_object_listener).
ObjectListener = Callable[[Event, Callable[[], dict[str, Any]]], None]
_CLOSED = WatchItem("CLOSED", b"", 0)
_MANAGED_FIELDS = b'"managedFields"'
_WATCH_TYPES = {
    EventType.CREATE: "ADDED",
    EventType.UPDATE: "MODIFIED",
    EventType.DELETE: "DELETED",
}


def _node_selector(selectors: Selectors) -> tuple[str, bool] | None:
    """(NODE, True) when the selectors are exactly the field selector
    spec.nodeName=NODE, (NODE, False) when exactly spec.nodeName!=NODE
    (`spec.nodeName!=`: every bound pod)."""
    fields = selectors.fields.requirements
    if selectors.labels.empty() and len(fields) == 1:
        (only,) = fields
        if only.path == "spec.nodeName" and only.op in ("=", "==", "!="):
            return only.value, only.op != "!="
    return None


def _transition(kind: EventType, was_in: bool, is_in: bool) -> str | None:
    """The watch event type of a store event for a watcher whose selection
    the object was in before (`was_in`) and is in now (`is_in`): an object
    that enters the selection is ADDED, one that leaves it DELETED."""
    if kind is EventType.CREATE:
        return "ADDED" if is_in else None
    if kind is EventType.DELETE:
        return "DELETED" if is_in else None
    if is_in:
        return "MODIFIED" if was_in else "ADDED"
    return "DELETED" if was_in else None


def _node_of(obj: dict[str, Any]) -> str:
    return field_value(obj, "spec.nodeName")  # exactly what the selector compares


class Watcher:
    """One API watch. Iterate for WatchItems; `stop()` from any thread."""

    def __init__(
        self,
        broadcaster: Broadcaster,
        info: KindInfo,
        namespace: str,
        selectors: Selectors,
        after: int,
        allow_bookmarks: bool,
        max_queue: int,
    ) -> None:
        self._broadcaster = broadcaster
        self.info = info
        self.namespace = namespace
        self.selectors = selectors
        self.prefix = list_prefix(info, namespace)
        self.after = after
        self.allow_bookmarks = allow_bookmarks
        # A C queue: the broadcaster puts every event for every watcher, and
        # queue.Queue's put (a Python condition's notify) was a few per cent
        # of a busy server's CPU. Its bound is kept here (0: none).
        self.max_queue = max_queue
        self._queue: queue.SimpleQueue[WatchItem] = queue.SimpleQueue()
        self.backlog: list[WatchItem] = []
        self.stopped = False
        self.dropped = False
        self.sent_rev = after
        self._live = False  # past the backlog: the next item comes from the queue
        # Deliver objects without metadata.managedFields (a client's caches
        # rarely read them, and they are about half of an object's bytes).
        self.omit_managed_fields = False

    # Called by the broadcaster under its lock.
    def offer(self, dispatch: _Dispatch) -> None:
        if self.stopped:
            return
        item = self.translate(dispatch)
        if item is not None:
            self._deliver(item)

    def offer_as(self, dispatch: _Dispatch, type_: str) -> None:
        """offer, for a watcher whose event type the broadcaster has already
        told from the object's old and new node (no selector evaluated)."""
        event = dispatch.event
        if self.stopped or event.rev <= self.after or not event.key.startswith(self.prefix):
            return
        self._deliver(dispatch.item(type_, self.omit_managed_fields))

    def _deliver(self, item: WatchItem) -> None:
        """The item queued (a subclass delivers it its own way)."""
        if 0 < self.max_queue <= self._queue.qsize():
            self.dropped = True
            self.stopped = True
            log.warning(
                "dropping a watcher of %s that fell %d events behind", self.info.plural,
                self.max_queue,
            )  # fmt: skip
            self._wake()
        else:
            self._queue.put_nowait(item)

    def translate(self, dispatch: _Dispatch) -> WatchItem | None:
        event = dispatch.event
        if event.rev <= self.after or not event.key.startswith(self.prefix):
            return None
        lean = self.omit_managed_fields
        if self.selectors.empty():
            return dispatch.item(_WATCH_TYPES[event.type], lean)
        new_match = self.selectors.matches(dispatch.new())
        old_match = new_match  # a create's or delete's type needs no previous object
        if event.type is not EventType.CREATE and event.type is not EventType.DELETE:
            old = dispatch.old()
            old_match = new_match if old is None else self.selectors.matches(old)
        type_ = _transition(event.type, old_match, new_match)
        return None if type_ is None else dispatch.item(type_, lean)

    def _wake(self) -> None:
        self._queue.put_nowait(_CLOSED)

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self._wake()
        self._broadcaster.unregister(self)

    def __iter__(self) -> Iterator[WatchItem]:
        try:
            backlog, self.backlog = self.backlog, []
            for item in backlog:
                if self.stopped:
                    return
                self.sent_rev = item.rev
                yield item
            self._live = True
            interval = self._broadcaster.bookmark_interval
            while not self.stopped:
                try:
                    item = self._queue.get(timeout=interval)
                except queue.Empty:
                    if self.allow_bookmarks:
                        rev = self._broadcaster.progress(self)
                        if rev is not None and rev > self.sent_rev:
                            self.sent_rev = rev
                            yield WatchItem("BOOKMARK", b"", rev)
                    continue
                if item is _CLOSED or self.stopped:
                    return
                self.sent_rev = item.rev
                yield item
        finally:
            self.stop()

    def empty(self) -> bool:
        return self._queue.empty()

    def batches(self, max_items: int = 64) -> Iterator[list[WatchItem]]:
        """The same items in order, each batch holding one item plus those already
        queued behind it (never waiting for more), so the transport can send them
        together."""
        items = iter(self)
        for item in items:
            batch = [item]
            while len(batch) < max_items and self._live and not self._queue.empty():
                following = next(items, None)  # queued: does not wait
                if following is None:
                    break
                batch.append(following)
            yield batch


class Broadcaster:
    """See the module docstring."""

    def __init__(
        self,
        store: Store,
        max_queue: int = 10_000,
        bookmark_interval: float = 5.0,
    ) -> None:
        self.store = store
        self.max_queue = max_queue
        self.bookmark_interval = bookmark_interval
        self._lock = threading.Lock()
        self._by_prefix: dict[str, list[Watcher]] = {}
        # Watchers of exactly `spec.nodeName=NODE` (every agent watches its own
        # pods so), by prefix then node: an event is offered to the watchers of
        # its old and new node only, not to one watcher per node in the cluster.
        self._by_node: dict[str, dict[str, list[Watcher]]] = {}
        # Watchers of exactly `spec.nodeName!=NODE` (`spec.nodeName!=`: the
        # bound pods, as hollow nodes watch), by prefix then NODE.
        self._by_other_node: dict[str, dict[str, list[Watcher]]] = {}
        # The node (spec.nodeName) of each key's last event, for the keys whose
        # watchers are by node: the next event's old node without decoding its
        # previous value, and so the event's type for those watchers. Only
        # ever the immediately preceding event's.
        self._nodes: dict[str, str] = {}
        # (key prefixes, listener): called for the events under those prefixes (all: none).
        self._listeners: list[tuple[tuple[str, ...], ObjectListener]] = []
        self._last = store.current_revision()
        self._stop = threading.Event()
        self._store_watch: Any = None
        self._healthy = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watch-broadcaster", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._healthy.wait(10)

    @property
    def last_revision(self) -> int:
        return self._last

    @property
    def ready(self) -> bool:
        """Whether watches are served: the store's watch was opened and the
        broadcaster still runs (the API server's informer-sync check)."""
        return self._healthy.is_set() and self._thread.is_alive() and not self._stop.is_set()

    def add_listener(
        self, listener: Callable[[Event], None], prefixes: tuple[str, ...] = ()
    ) -> None:
        """An in-process callback for every event (namespace cleanup, the node
        graph), called before any watcher sees the event; must not block.
        `prefixes`: only for the keys under one of these (one check here, not
        a call per event)."""
        self.add_object_listener(lambda event, _new: listener(event), prefixes)

    def add_object_listener(self, listener: ObjectListener, prefixes: tuple[str, ...] = ()) -> None:
        """add_listener for a callback that may read the event's new object:
        called with the event and a function that decodes its value once for
        the listeners and the watchers alike (read it, never change it)."""
        with self._lock:
            # replaced, never changed in place
            self._listeners = [*self._listeners, (prefixes, listener)]

    def _run(self) -> None:
        backoff = 0.1
        while not self._stop.is_set():
            try:
                self._store_watch = self.store.watch(ROOT, self._last)
                self._healthy.set()
                backoff = 0.1
                for event in self._store_watch:
                    if self._stop.is_set():
                        break
                    self._dispatch(event)
                    if self._stop.is_set():
                        break
            except Compacted:
                log.error("watch history compacted under the broadcaster; dropping all watchers")
                self._drop_all(self.store.current_revision())
            except StorageError as err:
                log.warning("store watch failed (%s); retrying in %.1fs", err, backoff)
            except Exception:
                log.exception("watch broadcaster failed; restarting it")
            finally:
                if self._store_watch is not None:
                    self._store_watch.close()
            if self._stop.wait(backoff):
                return
            backoff = min(backoff * 2, 5.0)

    def _drop_all(self, rev: int) -> None:
        with self._lock:
            watchers = self._all()
            self._last = rev
            self._nodes.clear()  # events are skipped: no key's last one is known
        for w in watchers:
            w.stop()

    def _dispatch(self, event: Event) -> None:
        # Listeners first: a watcher that reacts to the event (an agent to its
        # new pod) finds the server's own indexes (the node graph) current.
        dispatch = _Dispatch(event)
        key = event.key
        for prefixes, listener in self._listeners:
            if prefixes and not key.startswith(prefixes):
                continue
            try:
                listener(event, dispatch.new)
            except Exception:
                log.exception("watch listener failed")
        slash = key.find("/", len(ROOT))
        prefix = key[: slash + 1] if slash >= 0 else key
        with self._lock:
            watchers = self._by_prefix.get(prefix)
            if watchers:
                self._offer(watchers, dispatch)
            by_node = self._by_node.get(prefix)
            by_other = self._by_other_node.get(prefix)
            if not by_node and not by_other:
                self._nodes.pop(key, None)  # not followed: the next event decodes
            else:
                self._offer_by_node(dispatch, by_node or {}, by_other or {})
            if event.rev > self._last:
                self._last = event.rev

    def _offer_by_node(
        self,
        dispatch: _Dispatch,
        by_node: dict[str, list[Watcher]],
        by_other: dict[str, list[Watcher]],
    ) -> None:
        """Offer an event to the watchers selecting on its pod's node, each
        with the type its old and new node give (under the lock)."""
        event = dispatch.event
        key = event.key
        new_node = _node_of(dispatch.new())
        old_node = self._nodes.get(key)
        if old_node is None:
            old = dispatch.old()
            old_node = _node_of(old) if old is not None else new_node
        if event.type is EventType.DELETE:
            self._nodes.pop(key, None)
        else:
            self._nodes[key] = new_node
        group = by_node.get(new_node)
        if group:
            type_ = _transition(event.type, old_node == new_node, True)
            if type_ is not None:
                self._offer(group, dispatch, type_)
        if old_node != new_node:
            group = by_node.get(old_node)
            if group:
                type_ = _transition(event.type, True, False)
                if type_ is not None:
                    self._offer(group, dispatch, type_)
        for node, group in by_other.items():
            type_ = _transition(event.type, old_node != node, new_node != node)
            if type_ is not None:
                self._offer(group, dispatch, type_)

    @staticmethod
    def _offer(watchers: list[Watcher], dispatch: _Dispatch, type_: str | None = None) -> None:
        """Offer to each watcher (`type_`: the event's type for all of them,
        already told), dropping those that have stopped."""
        for watcher in watchers:
            if type_ is None:
                watcher.offer(dispatch)
            else:
                watcher.offer_as(dispatch, type_)
        if any(w.stopped for w in watchers):
            watchers[:] = [w for w in watchers if not w.stopped]

    def _node_groups(self, equal: bool) -> dict[str, dict[str, list[Watcher]]]:
        """The watchers of spec.nodeName=NODE (`equal`) or spec.nodeName!=NODE."""
        return self._by_node if equal else self._by_other_node

    def _all(self) -> list[Watcher]:
        every = [w for ws in self._by_prefix.values() for w in ws]
        for by_node in (*self._by_node.values(), *self._by_other_node.values()):
            every += [w for ws in by_node.values() for w in ws]
        return every

    def _group(self, watcher: Watcher, create: bool) -> list[Watcher] | None:
        """The list a watcher is registered in."""
        prefix = kind_prefix(watcher.info)
        selection = _node_selector(watcher.selectors)
        if selection is None:
            if create:
                return self._by_prefix.setdefault(prefix, [])
            return self._by_prefix.get(prefix)
        node, equal = selection
        groups = self._node_groups(equal)
        if create:
            return groups.setdefault(prefix, {}).setdefault(node, [])
        return groups.get(prefix, {}).get(node)

    def progress(self, watcher: Watcher) -> int | None:
        """The revision an idle watcher has certainly seen everything up to."""
        with self._lock:
            if watcher.empty():
                return self._last
        return None

    def watch(
        self,
        info: KindInfo,
        namespace: str,
        selectors: Selectors,
        resource_version: int | None,
        allow_bookmarks: bool = True,
        factory: Callable[..., Watcher] = Watcher,
        omit_managed_fields: bool = False,
    ) -> Watcher:
        """A watcher of events after resource_version (None: from now);
        `omit_managed_fields`: its objects come without metadata.managedFields.

        `factory` makes the watcher (called as Watcher is): the REST API's
        watchers deliver into its event loop instead of a blocking queue."""
        if not self._healthy.is_set():
            raise Unavailable("the watch cache is not ready")
        if resource_version is None:
            # "From now" is the store's revision, which may be ahead of what the
            # broadcaster has dispatched (etcd delivers its watch asynchronously).
            try:
                resource_version = self.store.current_revision()
            except StorageError as err:
                raise Unavailable(str(err)) from err
        compacted = self.store.compacted_revision()
        if resource_version < compacted:
            raise Gone(
                f"too old resource version: {resource_version} (the oldest retained is "
                f"{compacted + 1}); relist"
            )
        with self._lock:
            last = self._last
            after = resource_version
            watcher = factory(
                self, info, namespace, selectors, after, allow_bookmarks, self.max_queue
            )
            watcher.omit_managed_fields = omit_managed_fields
            group = self._group(watcher, create=True)
            assert group is not None
            group.append(watcher)
        if after < last:
            try:
                history = self.store.history(after, last, watcher.prefix)
            except Compacted as err:
                self.unregister(watcher)
                raise Gone(
                    f"too old resource version: {after} (the oldest retained is "
                    f"{err.compacted + 1}); relist"
                ) from err
            except StorageError as err:
                self.unregister(watcher)
                raise Unavailable(str(err)) from err
            items = [watcher.translate(_Dispatch(e)) for e in history]
            watcher.backlog = [i for i in items if i is not None]
        return watcher

    def unregister(self, watcher: Watcher) -> None:
        with self._lock:
            watchers = self._group(watcher, create=False)
            if watchers and watcher in watchers:
                watchers.remove(watcher)
            selection = _node_selector(watcher.selectors)
            if selection is not None and not watchers:
                # No empty group left behind per node that ever watched.
                node, equal = selection
                groups = self._node_groups(equal)
                prefix = kind_prefix(watcher.info)
                by_node = groups.get(prefix, {})
                by_node.pop(node, None)
                if not by_node:
                    groups.pop(prefix, None)  # the node cache stops with the last one

    def watcher_count(self) -> int:
        with self._lock:
            return len(self._all())

    def watcher_counts(self) -> dict[str, int]:
        """Registered watchers per storage name ("pods"), for /metrics."""
        counts: dict[str, int] = {}
        with self._lock:
            for prefix, ws in self._by_prefix.items():
                name = prefix[len(ROOT) :].rstrip("/")
                counts[name] = counts.get(name, 0) + len(ws)
            for groups in (self._by_node, self._by_other_node):
                for prefix, by_node in groups.items():
                    name = prefix[len(ROOT) :].rstrip("/")
                    counts[name] = counts.get(name, 0) + sum(len(ws) for ws in by_node.values())
        return counts

    def stop(self) -> None:
        self._stop.set()
        if self._store_watch is not None:
            self._store_watch.close()
        self._drop_all(self._last)
        self._thread.join(5)
