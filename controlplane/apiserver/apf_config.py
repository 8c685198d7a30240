"""The API server's flow control follows the stored FlowSchemas and
PriorityLevelConfigurations (Kubernetes' APF configuration controller, in
small): read at start, read again after any of them changes.

The broadcaster's listener only marks the configuration stale; one thread
reads both kinds from the registry and hands them to `FlowControl.configure`
(a burst of changes costs one read). The same thread divides the seats
between the levels anew every `apf_borrowing.PERIOD` (`FlowControl.adjust`). The bootstrap objects are in the store
before the first read (ApiServer.bootstrap), so a new server starts with
Kubernetes' defaults either way.
"""

from __future__ import annotations

import logging
import threading
import time

from controlplane.api import apf_bootstrap
from controlplane.api.kinds import by_kind
from controlplane.apiserver import apf_borrowing
from controlplane.apiserver.codec import ROOT, decode
from controlplane.apiserver.flowcontrol import FlowControl
from controlplane.apiserver.registry import Registry
from controlplane.storage.interface import Event

log = logging.getLogger(__name__)


class ApfConfig:
    def __init__(
        self, registry: Registry, flow: FlowControl, period: float = apf_borrowing.PERIOD
    ) -> None:
        self.registry = registry
        self.flow = flow
        self.period = period
        # The keys of the events on_event reads.
        self.prefixes = tuple(
            f"{ROOT}{by_kind(kind).storage_name}/" for kind in (apf_bootstrap.FS, apf_bootstrap.PLC)
        )
        self._stale = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.loads = 0

    def load(self) -> None:
        schemas = [decode(d, r) for d, r in self.registry.list(apf_bootstrap.FS).items]
        levels = [decode(d, r) for d, r in self.registry.list(apf_bootstrap.PLC).items]
        self.flow.configure(schemas, levels)
        self.loads += 1

    def on_event(self, event: Event) -> None:
        """Broadcaster listener: cheap, never blocks."""
        if event.key.startswith(self.prefixes):
            self._stale.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="apf-config", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._stale.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        next_adjust = time.monotonic() + self.period
        while not self._stop.is_set():
            stale = self._stale.wait(max(next_adjust - time.monotonic(), 0.0))
            if self._stop.is_set():
                return
            if time.monotonic() >= next_adjust:
                next_adjust = time.monotonic() + self.period
                self.flow.adjust()
            if not stale:
                continue
            self._stale.clear()
            try:
                self.load()
            except Exception:  # the previous configuration stays; the next change retries
                log.exception("reading the flow-control configuration failed")
