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
    """The loop of a rule writer; the writer sets these attributes in its
    __init__ and provides sync(full) (which sets _last_sync) and _ready()."""

    what: str  # for the log: "service proxy sync failed, retrying: ..."
    clock: Clock
    _wake: threading.Event
    _stop: threading.Event
    _full: threading.Event
    _timer: Timer | None
    _last_sync: float
    last_error: Exception | None

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
