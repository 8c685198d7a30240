"""How far the API server's in-memory indexes have followed the store.

The node graph and the RBAC index are fed by the broadcaster's listeners,
in store order; `IndexProgress` is the last listener, so once it has seen
revision R every index has applied every write up to R. An authorizer that
is about to refuse waits here (briefly) for the store's current revision:
a request that follows a write (a binding just created, a pod just bound)
is then judged as of that write, as a read of the store would be.
"""

from __future__ import annotations

import threading

from controlplane.storage.interface import Event


class IndexProgress:
    def __init__(self) -> None:
        self._revision = 0
        self._advanced = threading.Condition()

    def advance(self, revision: int) -> None:
        with self._advanced:
            if revision > self._revision:
                self._revision = revision
                self._advanced.notify_all()

    def on_event(self, event: Event) -> None:
        """Broadcaster listener (add it after the indexes' own)."""
        self.advance(event.rev)

    def catch_up(self, revision: int, timeout: float) -> bool:
        """Wait at most `timeout` s until every write up to `revision` is applied."""
        with self._advanced:
            return self._advanced.wait_for(lambda: self._revision >= revision, timeout)
