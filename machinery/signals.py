"""Stopping on SIGTERM and SIGINT, whichever thread the kernel hands them to.

CPython runs a signal's Python handler only on the main thread, and only
when that thread next runs bytecode. A main thread blocked in a lock wait
(`threading.Event.wait()`) is woken early only if the kernel delivered the
signal to that very thread; delivered to one of the process's other
threads, the handler waits until the main thread wakes for another reason,
which may be never: the control plane, with about 300 threads, was killed
after 20 s with its handler not run (test_shutdown_order in CI). A handler
that calls `Event.set()` has a second trap: it may run on the main thread
while that thread holds the same Event's lock inside `wait(timeout)`, and
the non-reentrant lock deadlocks.

`StopSignals` avoids both. The C-level handler writes the signal's number
to a wakeup pipe from whichever thread took the signal (`signal.
set_wakeup_fd`); the main thread blocks reading that pipe and sets the
event itself, outside any lock. The Python handlers do nothing. Code that
decides to stop without a signal calls `set()`, which wakes the pipe too.

A process forked without exec inherits the wakeup pipe; such a child calls
`signal.set_wakeup_fd(-1)` first (skiff's forked monitors never use this).
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from collections.abc import Iterable
from types import FrameType

DEFAULT_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_WAKE = b"\0"  # written by set(): no signal has the number 0


def _ignore(signum: int, frame: FrameType | None) -> None:
    """The Python-level handler: the wakeup pipe carries the signal."""


class StopSignals(threading.Event):
    """An Event that SIGTERM or SIGINT (or `set()`) sets once the main
    thread waits on it with `wait_in_main()`.

    Other threads may wait on it as on any Event. Install it on the main
    thread before starting anything, so a signal during start is kept."""

    def __init__(self, signals: Iterable[int] = DEFAULT_SIGNALS) -> None:
        super().__init__()
        self.signals = frozenset(int(s) for s in signals)
        self.signum: int | None = None
        self._read, self._write = os.pipe()  # neither end is inherited by children
        os.set_blocking(self._write, False)  # as set_wakeup_fd requires
        self._previous_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._previous = {sig: signal.signal(sig, _ignore) for sig in self.signals}

    def set(self) -> None:
        super().set()
        try:
            os.write(self._write, _WAKE)
        except (BlockingIOError, OSError):  # a full pipe already wakes the reader
            pass

    def wait_in_main(self, timeout: float | None = None) -> bool:
        """On the main thread: block until a signal or `set()`, at most
        `timeout` seconds (None: no limit); whether it is set. `signum`
        then names the signal (None after `set()`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            readable, _, _ = select.select([self._read], [], [], left)
            if readable:
                for byte in os.read(self._read, 64):
                    if byte in self.signals and self.signum is None:
                        self.signum = byte
                        super().set()
        return True

    def close(self) -> None:
        """Give the signals back their earlier handlers and close the pipe."""
        signal.set_wakeup_fd(self._previous_fd)
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        os.close(self._read)
        os.close(self._write)
