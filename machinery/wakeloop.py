"""A loop on a background thread that an event wakes early and stop ends:
the periodic passes of the API server's aggregator and metrics collector."""

from __future__ import annotations

import threading
from collections.abc import Callable


class WakeLoop:
    """The thread, its wake-up and its stop flag; the owner writes the loop
    (`while not loop.stopped(): ...; loop.wait(period)`)."""

    def __init__(self) -> None:
        self._stopped = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, run: Callable[[], None], name: str) -> None:
        self._thread = threading.Thread(target=run, name=name, daemon=True)
        self._thread.start()

    def stopped(self) -> bool:
        return self._stopped.is_set()

    def wake(self) -> None:
        """The next `wait` returns at once (cheap: an event listener may call it)."""
        self._wake.set()

    def wait(self, timeout: float | None = None) -> None:
        """Until woken, stopped or `timeout` has passed; the wake-up is used up."""
        self._wake.wait(timeout)
        self._wake.clear()

    def stop(self, timeout: float = 5.0) -> None:
        """Stopped and woken; waits up to `timeout` for the pass in progress."""
        self._stopped.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
