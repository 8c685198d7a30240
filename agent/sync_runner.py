"""The worker loop the agent's rule writers share (the service proxy, the
NetworkPolicy controller, the ingress controller), as kube-proxy's
BoundedFrequencyRunner: informer events only wake it; it syncs once its
informers have synced (rules from half-filled caches would cut live traffic
off), at most once per min_sync_interval, in full every sync_period, and
again after retry_interval when a sync fails."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol

from controlplane.client.informer import Handler, SharedInformer
from controlplane.client.interface import Object
from machinery.clock import Clock, Timer

log = logging.getLogger("skiff.agent.sync")


class SyncTiming(Protocol):
    @property
    def min_sync_interval(self) -> float: ...
    @property
    def retry_interval(self) -> float: ...
    @property
    def sync_period(self) -> float: ...


class SyncRunner:
    """The loop of a rule writer, which calls _init_runner in its __init__,
    _start_runner and _stop_runner from its start and stop, and provides
    sync(full) (which sets _last_sync), _ready() and _sync_timing()."""

    what: str  # for the log: "service proxy sync failed, retrying: ..."

    def _init_runner(self, clock: Clock) -> None:
        self.clock = clock
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._full = threading.Event()
        self._thread: threading.Thread | None = None
        self._timer: Timer | None = None
        self._handlers: list[tuple[SharedInformer, Handler]] = []
        self._last_sync = float("-inf")
        self.last_error: Exception | None = None

    def _start_runner(self, informers: tuple[SharedInformer, ...]) -> None:
        """Wake on every event of `informers` (the caller starts them, then
        _run_loop)."""
        for informer in informers:
            handler = informer.add_event_handler(self._on_add, self._on_update, self._on_delete)
            self._handlers.append((informer, handler))

    def _run_loop(self, name: str) -> None:
        """The loop on a thread of its own, with a first sync even when
        there is nothing to watch yet, and the periodic full one."""
        self._wake.set()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._schedule_periodic()

    def _stop_runner(self) -> None:
        """The loop stopped (a sync in progress finishes first); the
        informers' handlers removed (a shared factory lives on)."""
        self._stop.set()
        self._wake.set()
        for informer, handler in self._handlers:
            informer.remove_event_handler(handler)
        self._handlers.clear()
        if self._timer is not None:
            self._timer.cancel()
        if self._thread is not None:
            self._thread.join(10)

    # ---- informer handlers: wake the worker, nothing else ------------------

    def _on_add(self, obj: Object) -> None:
        self._wake.set()

    def _on_update(self, old: Object, new: Object) -> None:
        if old is not new:
            self._wake.set()

    def _on_delete(self, obj: Object) -> None:
        self._wake.set()

    def sync(self, full: bool = False) -> None:
        raise NotImplementedError

    def _ready(self) -> bool:
        """Whether every informer the sync reads has synced."""
        raise NotImplementedError

    def _sync_timing(self) -> SyncTiming:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.is_set():
                return
            if not self._ready():
                continue
            timing = self._sync_timing()
            wait = self._last_sync + timing.min_sync_interval - self.clock.monotonic()
            if wait > 0 and self.clock.sleep(wait, self._stop):
                return
            self._wake.clear()
            full = self._full.is_set()
            self._full.clear()
            try:
                self.sync(full=full)
                self.last_error = None
            except Exception as err:
                self.last_error = err
                log.warning("%s sync failed, retrying: %s", self.what, err)
                self.clock.call_later(timing.retry_interval, self._wake.set)

    def _schedule_periodic(self) -> None:
        period = self._sync_timing().sync_period
        if self._stop.is_set() or period <= 0:
            return

        def fire() -> None:
            self._full.set()
            self._wake.set()
            self._schedule_periodic()

        self._timer = self.clock.call_later(period, fire)

    def _wakes(self) -> Callable[..., None]:
        return lambda *_: self._wake.set()
