"""PLEG, the pod lifecycle event generator: relist the runtime's state and
enqueue every pod whose sandboxes or containers changed state since the
last relist (and the pods the runtime holds that the agent does not know,
so their workers clean them up).

A pod's state is a fingerprint of its sandboxes' and containers' ids and
states; the first relist enqueues every pod the runtime has. Each relist's
duration is kept (`last_duration`, the kubelet's
pleg_relist_duration_seconds) and `health()` says, as the kubelet's PLEG
does, that the node is not healthy once no relist has completed for three
minutes (a wedged runtime): the node then turns NotReady. A relist that
fails (ListContainers or ListPodSandbox) is kept in `last_error`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from agent.cri_client import CRIError
from agent.runtime_view import RuntimeView

RELIST_THRESHOLD = 180.0  # seconds: the kubelet's relistThreshold
SLOW_RELIST = 1.0  # seconds: a relist longer than this is logged

log = logging.getLogger("skiff.agent.pleg")


class Pleg:
    def __init__(
        self,
        view: RuntimeView,
        enqueue: Callable[[str], None],
        now: Callable[[], float] = time.monotonic,
        threshold: float = RELIST_THRESHOLD,
    ) -> None:
        self.view = view
        self.threshold = threshold
        self.enqueue = enqueue
        self.now = now
        self._fingerprints: dict[str, Any] = {}
        self.last_active = now()  # when the last relist completed (or we started)
        self.last_duration = 0.0
        self.last_error = ""
        # Told each relist's duration (/metrics: kubelet_pleg_relist_duration_seconds).
        self.on_relist: Callable[[float], None] | None = None

    def health(self) -> str | None:
        """None if healthy, else why not (the kubelet's words)."""
        idle = self.now() - self.last_active
        if idle <= self.threshold:
            return None
        why = (
            f"PLEG is not healthy: pleg was last seen active {_go(idle)} ago;"
            f" threshold is {_go(self.threshold)}"
        )
        return f"{why}; last relist error: {self.last_error}" if self.last_error else why

    def relist(self) -> None:
        """Enqueue pods whose runtime state changed, and orphans."""
        start = self.now()
        try:
            records = self.view.relist()
        except CRIError as err:
            self.last_error = str(err)
            raise
        self.last_error = ""
        seen = set()
        for uid, rec in records.items():
            seen.add(uid)
            fp = (
                tuple((s.id, s.state) for s in rec.sandboxes),
                tuple((c.id, c.state) for c in rec.containers),
            )
            if self._fingerprints.get(uid) != fp:
                self._fingerprints[uid] = fp
                self.enqueue(uid)
        for uid in set(self._fingerprints) - seen:
            del self._fingerprints[uid]
        end = self.now()
        self.last_duration = end - start
        self.last_active = end
        if self.on_relist is not None:
            self.on_relist(self.last_duration)
        if self.last_duration > SLOW_RELIST:
            log.info("PLEG relist took %.2fs (%d pods)", self.last_duration, len(records))

    def known(self) -> set[str]:
        """UIDs of the pods the runtime held at the last relist."""
        return set(self._fingerprints)

    def forget(self, uid: str) -> None:
        """The pod is cleaned up: a later relist that finds it again enqueues it."""
        self._fingerprints.pop(uid, None)


def _go(seconds: float) -> str:
    """A duration as Go prints it (3m0s, 3m12.5s)."""
    m, sec = divmod(seconds, 60.0)
    return f"{int(m)}m{sec:g}s" if m else f"{sec:g}s"
