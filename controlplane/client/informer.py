"""Shared informers: one list+watch per kind, an indexed cache, many handlers.

A `SharedInformer` runs one `Reflector` into one `Store` and tells every
registered handler what changed: `on_add(obj)`, `on_update(old, new)`,
`on_delete(obj)`. A handler added after the cache is filled first receives an
add for every cached object, so late subscribers miss nothing. Every
`resync_period` seconds (on the injected clock) each handler gets
`on_update(obj, obj)` for every cached object, so level-triggered controllers
re-check the world even when nothing changed. `SharedInformerFactory` hands
out one informer per (kind, namespace, label selector, field selector), so
one watch per kind serves every controller in a process.

Handlers run on the reflector's thread, one at a time and in event order;
they must be quick (compute a key, put it on a workqueue) and must not change
the objects they are given. A failing handler is logged and skipped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from controlplane.client.interface import ApiClient, Object
from controlplane.client.reflector import Backoff, Reflector
from controlplane.client.store import IndexFunc, Store, object_key
from machinery.clock import Clock, RealClock, Timer

log = logging.getLogger(__name__)

AddFunc = Callable[[Object], None]
UpdateFunc = Callable[[Object, Object], None]
DeleteFunc = Callable[[Object], None]


@dataclass(frozen=True, eq=False)
class Handler:
    """One subscriber. Compared by identity; returned by `add_event_handler`."""

    on_add: AddFunc | None = None
    on_update: UpdateFunc | None = None
    on_delete: DeleteFunc | None = None


class SharedInformer:
    def __init__(
        self,
        client: ApiClient,
        kind: str,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        resync_period: float = 0.0,
        clock: Clock | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        self.kind = kind
        self.clock: Clock = clock or RealClock()
        self.store = Store(indexers)
        self.resync_period = resync_period
        self._handlers: list[Handler] = []
        self._lock = threading.RLock()  # serialises dispatch and handler changes
        self._synced = threading.Event()
        self._resync_timer: Timer | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False
        self.reflector = Reflector(
            client,
            kind,
            self,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            clock=self.clock,
            backoff=backoff,
        )

    # ---- subscribers -------------------------------------------------------

    def add_event_handler(
        self,
        on_add: AddFunc | None = None,
        on_update: UpdateFunc | None = None,
        on_delete: DeleteFunc | None = None,
    ) -> Handler:
        handler = Handler(on_add, on_update, on_delete)
        with self._lock:
            self._handlers.append(handler)
            if self._synced.is_set() and on_add is not None:
                for obj in self.store.list():
                    self._call(on_add, obj)
        return handler

    def remove_event_handler(self, handler: Handler) -> None:
        with self._lock:
            if handler in self._handlers:
                self._handlers.remove(handler)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        self.store.add_indexers(indexers)

    # ---- lifecycle ---------------------------------------------------------

    def has_synced(self) -> bool:
        """True once the first list has been delivered to the store and handlers."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    def run(self) -> None:
        """List and watch until `stop()`. Blocks; `start()` runs it on a thread."""
        self._schedule_resync()
        self.reflector.run()

    def start(self) -> None:
        with self._lock:
            if self._thread is not None or self._stopped:
                return
            self._thread = threading.Thread(
                target=self.run, name=f"informer-{self.kind}", daemon=True
            )
            self._thread.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        with self._lock:
            self._stopped = True
            if self._resync_timer is not None:
                self._resync_timer.cancel()
                self._resync_timer = None
        self.reflector.stop()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def started(self) -> bool:
        return self._thread is not None

    # ---- the reflector's sink ---------------------------------------------

    def replace(self, items: list[Object], resource_version: str) -> None:
        with self._lock:
            old = self.store.replace(items)
            for obj in items:
                prev = old.pop(object_key(obj), None)
                if prev is None:
                    self._dispatch_add(obj)
                else:
                    self._dispatch_update(prev, obj)
            for gone in old.values():
                self._dispatch_delete(gone)
            self._synced.set()

    def add(self, obj: Object) -> None:
        self.update(obj)

    def update(self, obj: Object) -> None:
        with self._lock:
            prev = self.store.update(obj)
            if prev is None:
                self._dispatch_add(obj)
            else:
                self._dispatch_update(prev, obj)

    def delete(self, obj: Object) -> None:
        with self._lock:
            self.store.delete(obj)
            self._dispatch_delete(obj)

    # ---- dispatch ----------------------------------------------------------

    def _call(self, func: Callable[..., None], *args: Object) -> None:
        try:
            func(*args)
        except Exception:  # a handler's bug must not stop the informer
            log.exception("event handler failed", extra={"kind": self.kind})

    def _dispatch_add(self, obj: Object) -> None:
        for h in list(self._handlers):
            if h.on_add is not None:
                self._call(h.on_add, obj)

    def _dispatch_update(self, old: Object, new: Object) -> None:
        for h in list(self._handlers):
            if h.on_update is not None:
                self._call(h.on_update, old, new)

    def _dispatch_delete(self, obj: Object) -> None:
        for h in list(self._handlers):
            if h.on_delete is not None:
                self._call(h.on_delete, obj)

    def _schedule_resync(self) -> None:
        if self.resync_period <= 0:
            return
        with self._lock:
            if not self._stopped:
                self._resync_timer = self.clock.call_later(self.resync_period, self._resync)

    def _resync(self) -> None:
        with self._lock:
            if self._stopped:
                return
            if self._synced.is_set():
                for obj in self.store.list():
                    self._dispatch_update(obj, obj)
        self._schedule_resync()


FactoryKey = tuple[str, str, str, str]


class SharedInformerFactory:
    """One informer per (kind, namespace, label selector, field selector)."""

    def __init__(
        self,
        client: ApiClient,
        resync_period: float = 0.0,
        clock: Clock | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        self.client = client
        self.resync_period = resync_period
        self.clock: Clock = clock or RealClock()
        self.backoff = backoff
        self._lock = threading.Lock()
        self._informers: dict[FactoryKey, SharedInformer] = {}

    def informer_for(
        self,
        kind: str,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        resync_period: float | None = None,
    ) -> SharedInformer:
        key = (kind, namespace or "", label_selector, field_selector)
        with self._lock:
            informer = self._informers.get(key)
            if informer is None:
                informer = SharedInformer(
                    self.client,
                    kind,
                    namespace=namespace,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    resync_period=self.resync_period if resync_period is None else resync_period,
                    clock=self.clock,
                    backoff=self.backoff,
                )
                self._informers[key] = informer
            return informer

    def informers(self) -> list[SharedInformer]:
        with self._lock:
            return list(self._informers.values())

    def start(self) -> None:
        """Start every informer not yet started (call again after adding more)."""
        for informer in self.informers():
            informer.start()

    def wait_for_cache_sync(self, timeout: float = 30.0) -> bool:
        """Block until every started informer has synced, or `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        for informer in self.informers():
            if not informer.wait_for_sync(max(0.0, deadline - time.monotonic())):
                return False
        return True

    def shutdown(self, timeout: float | None = 5.0) -> None:
        for informer in self.informers():
            informer.stop(timeout)
