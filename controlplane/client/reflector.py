"""The reflector: list a kind, then watch it, and mirror every change into a sink.

One reflector keeps one local copy of one kind (optionally one namespace or
selector) up to date: it lists once, hands the whole list to the sink
(`replace`), then watches from the list's resourceVersion and forwards each
event (`add`/`update`/`delete`). When a watch ends it resumes from the last
resourceVersion it saw (BOOKMARK events advance it too, so resuming after a
quiet period does not fall out of the history); when the server answers Gone
it relists; on any other error it backs off exponentially on the injected
clock. It never polls: between events it blocks in the watch.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Protocol

from controlplane.client import errors
from controlplane.client.interface import ApiClient, ListOptions, Object, Watch
from machinery.clock import Clock, RealClock

log = logging.getLogger(__name__)

EMPTY_WATCHES_BEFORE_BACKOFF = 3


class Sink(Protocol):
    """Where a reflector delivers what it sees (an informer, or a bare store)."""

    def replace(self, items: list[Object], resource_version: str) -> None: ...

    def add(self, obj: Object) -> None: ...

    def update(self, obj: Object) -> None: ...

    def delete(self, obj: Object) -> None: ...


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff: initial, doubled each failure, capped; reset on success."""

    initial: float = 0.8
    cap: float = 30.0
    factor: float = 2.0

    def next(self, current: float) -> float:
        return self.initial if current <= 0 else min(self.cap, current * self.factor)


class Reflector:
    def __init__(
        self,
        client: ApiClient,
        kind: str,
        sink: Sink,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        clock: Clock | None = None,
        backoff: Backoff | None = None,
        page_size: int = 0,
    ) -> None:
        self.client = client
        self.kind = kind
        self.sink = sink
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.clock: Clock = clock or RealClock()
        self.backoff = backoff or Backoff()
        self.page_size = page_size
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._watch: Watch | None = None
        self._resource_version = ""
        self._delay = 0.0
        self._empty_watches = 0
        self.lists = 0  # how many times it listed (tests and metrics)
        self.watches = 0

    @property
    def last_sync_resource_version(self) -> str:
        return self._resource_version

    @property
    def current_backoff(self) -> float:
        """The delay the next failure will wait (0 after a success)."""
        return self._delay

    def stop(self) -> None:
        """End `run()` from any thread (the open watch is stopped too)."""
        self._stop.set()
        with self._lock:
            watch = self._watch
        if watch is not None:
            watch.stop()

    def stopped(self) -> bool:
        return self._stop.is_set()

    def run(self, stop: threading.Event | None = None) -> None:
        """List and watch until `stop()` (or `stop` is set). Blocks."""
        if stop is not None:
            outer = stop

            def relay() -> None:
                # ends with run(): checks our own flag between short waits
                while not outer.wait(0.2):
                    if self._stop.is_set():
                        return
                self.stop()

            threading.Thread(
                target=relay,
                name=f"reflector-stop-{self.kind}",
                daemon=True,
            ).start()
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                if self._watch_once():
                    self._empty_watches = 0
                else:
                    # A server that keeps closing watches at once must not
                    # make us spin: after a few empty ones, back off.
                    self._empty_watches += 1
                    if self._empty_watches >= EMPTY_WATCHES_BEFORE_BACKOFF:
                        self._delay = self.backoff.next(self._delay)
                        if self.clock.sleep(self._delay, self._stop):
                            return
            except errors.Gone as err:
                log.info("watch too old, relisting", extra={"kind": self.kind, "err": str(err)})
                need_list = True
            except Exception as err:  # every failure: back off and retry
                if self._stop.is_set():
                    return
                self._delay = self.backoff.next(self._delay)
                log.warning(
                    "list/watch failed; retrying in %.1fs: %s",
                    self._delay,
                    err,
                    extra={"kind": self.kind},
                )
                if self.clock.sleep(self._delay, self._stop):
                    return

    def _options(self, resource_version: str = "", continue_token: str = "") -> ListOptions:
        return ListOptions(
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            limit=self.page_size,
            continue_token=continue_token,
            resource_version=resource_version,
        )

    def _list(self) -> None:
        items: list[Object] = []
        token = ""
        while True:
            page = self.client.list(self.kind, self.namespace, self._options(continue_token=token))
            items.extend(page.items)
            token = page.continue_token
            if not token:
                break
        self.lists += 1
        self._resource_version = page.resource_version
        self.sink.replace(items, page.resource_version)
        self._delay = 0.0

    def _watch_once(self) -> bool:
        """One watch until it ends; True if it delivered any event."""
        watch = self.client.watch(
            self.kind, self.namespace, self._options(self._resource_version), allow_bookmarks=True
        )
        with self._lock:
            self._watch = watch
        self.watches += 1
        delivered = False
        try:
            if self._stop.is_set():
                return delivered
            for event in watch:
                if self._stop.is_set():
                    return delivered
                delivered = True
                self._delay = 0.0
                obj = event.object
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
                if event.type == "ADDED":
                    self.sink.add(obj)
                elif event.type == "MODIFIED":
                    self.sink.update(obj)
                elif event.type == "DELETED":
                    self.sink.delete(obj)
                if rv:
                    self._resource_version = rv
            return delivered
        finally:
            with self._lock:
                self._watch = None
            watch.stop()
