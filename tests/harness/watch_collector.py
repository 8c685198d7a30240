"""Reading a watch on a thread, for tests that wait on what it delivered."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from controlplane.client.interface import WatchEvent


class Collector:
    """Reads a watch on a thread; tests wait on what it collected."""

    def __init__(self, events: Iterator[WatchEvent]) -> None:
        self.events: list[WatchEvent] = []
        self.error: BaseException | None = None
        self.ended = threading.Event()
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, args=(events,), daemon=True)
        self._thread.start()

    def _run(self, events: Iterator[WatchEvent]) -> None:
        try:
            for event in events:
                with self._cond:
                    self.events.append(event)
                    self._cond.notify_all()
        except BaseException as err:
            self.error = err
        finally:
            self.ended.set()
            with self._cond:
                self._cond.notify_all()

    def wait(self, n: int, timeout: float = 10.0, bookmarks: bool = False) -> list[WatchEvent]:
        def ready() -> bool:
            return len(self.real()) >= n if not bookmarks else len(self.events) >= n

        with self._cond:
            if not self._cond.wait_for(lambda: ready() or self.ended.is_set(), timeout):
                raise AssertionError(f"only {len(self.real())} of {n} events arrived")
        assert ready(), f"watch ended after {len(self.real())} events ({self.error!r})"
        return self.real()

    def real(self) -> list[WatchEvent]:
        return [e for e in self.events if e.type != "BOOKMARK"]
