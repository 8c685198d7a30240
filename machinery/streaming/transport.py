"""What the streaming codecs need from the connection under them.

`Reader` is the read side of an upgraded HTTP connection (a socket file or
the buffered reader the HTTP server hands over); `read_exact` reads a whole
frame header or payload from it; `StreamError` is what writing to a stream
or connection that is gone raises, in SPDY and WebSocket alike.
"""

from __future__ import annotations

from typing import Protocol


class Reader(Protocol):
    def read(self, n: int, /) -> bytes: ...


class StreamError(OSError):
    """Writing to a stream that was reset, finished or whose session is gone."""


def read_exact(reader: Reader, n: int) -> bytes:
    """Exactly `n` bytes from `reader`; EOFError when it ends first."""
    out = b""
    while len(out) < n:
        chunk = reader.read(n - len(out))
        if not chunk:
            raise EOFError
        out += chunk
    return out
