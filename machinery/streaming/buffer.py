"""A thread-safe byte buffer between a connection's reader thread and a consumer.

The SPDY session and the WebSocket demultiplexer feed bytes that arrive from
the peer into an `InboundBuffer`; one consumer thread reads them. `close()` is
the peer's half-close (EOF after the buffered bytes), `abort()` drops
everything and wakes the reader at once. `on_consumed` hears of every byte
that leaves the buffer, read or dropped, so flow-control credit is returned
for both. With a `limit`, `feed` blocks while that many bytes wait unread:
a peer that ignores flow control is slowed down instead of filling memory. Feeding never blocks, so a reader
thread can never be stalled by a slow consumer; flow control is the
protocol's job (see `on_consumed`). This module must never do I/O.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable


class InboundBuffer:
    def __init__(
        self, on_consumed: Callable[[int], None] | None = None, limit: int | None = None
    ) -> None:
        self._limit = limit
        self._cond = threading.Condition()
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._closed = False
        self._on_consumed = on_consumed

    def feed(self, data: bytes) -> None:
        if not data:
            return
        with self._cond:
            if self._limit is not None:
                # backpressure on the connection, as spdystream does: the
                # reader thread waits for the consumer (or an abort).
                self._cond.wait_for(lambda: self._size < self._limit or self._closed)  # type: ignore[operator]
            dropped = self._closed
            if not dropped:
                self._chunks.append(bytes(data))
                self._size += len(data)
                self._cond.notify_all()
        if dropped:
            self._report(len(data))

    def close(self) -> None:
        """EOF once the buffered bytes have been read."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def abort(self) -> None:
        """EOF now: drop buffered bytes and wake the reader."""
        with self._cond:
            self._closed = True
            self._chunks.clear()
            dropped, self._size = self._size, 0
            self._cond.notify_all()
        self._report(dropped)

    def _report(self, n: int) -> None:
        if n and self._on_consumed is not None:
            self._on_consumed(n)

    @property
    def closed(self) -> bool:
        with self._cond:
            return self._closed

    def read(self, n: int = 65536, timeout: float | None = None) -> bytes:
        """Up to `n` bytes; b"" at EOF. Raises TimeoutError after `timeout`."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._chunks or self._closed, timeout):
                raise TimeoutError("no data")
            if not self._chunks:
                return b""
            out = bytearray()
            while self._chunks and len(out) < n:
                chunk = self._chunks.popleft()
                take = n - len(out)
                if len(chunk) > take:
                    self._chunks.appendleft(chunk[take:])
                    chunk = chunk[:take]
                out += chunk
            self._size -= len(out)
            self._cond.notify_all()
        self._report(len(out))
        return bytes(out)
