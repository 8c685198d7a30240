"""PLEG, the pod lifecycle event generator: relist the runtime's state and
enqueue every pod whose sandboxes or containers changed state since the
last relist (and the pods the runtime holds that the agent does not know,
so their workers clean them up).

A pod's state is a fingerprint of its sandboxes' and containers' ids and
states; the first relist enqueues every pod the runtime has.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.runtime_view import RuntimeView


class Pleg:
    def __init__(self, view: RuntimeView, enqueue: Callable[[str], None]) -> None:
        self.view = view
        self.enqueue = enqueue
        self._fingerprints: dict[str, Any] = {}

    def relist(self) -> None:
        """Enqueue pods whose runtime state changed, and orphans."""
        records = self.view.relist()
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

    def known(self) -> set[str]:
        """UIDs of the pods the runtime held at the last relist."""
        return set(self._fingerprints)

    def forget(self, uid: str) -> None:
        """The pod is cleaned up: a later relist that finds it again enqueues it."""
        self._fingerprints.pop(uid, None)
