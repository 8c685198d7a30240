"""Names and small codecs of the Kubernetes remote-command protocol.

Over SPDY a client opens one stream per channel, named by its `streamType`
header (error, stdin, stdout, stderr, resize) and negotiates a version with
`X-Stream-Protocol-Version` (v4, v3 or v2); over WebSocket the channels are
bytes (websocket.py) and the versions v5/v4. Terminal sizes travel on the
resize stream as JSON objects {"Width": w, "Height": h}. Running a command
is runtime/streaming/remotecommand.py's job; this module must never do I/O
beyond reading a `Source` it is handed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

STREAM_ERROR = "error"
STREAM_STDIN = "stdin"
STREAM_STDOUT = "stdout"
STREAM_STDERR = "stderr"
STREAM_RESIZE = "resize"
HEADER_STREAM_TYPE = "streamType"
HEADER_PROTOCOL_VERSION = "X-Stream-Protocol-Version"
HEADER_ACCEPTED_VERSIONS = "X-Accepted-Stream-Protocol-Versions"

V4 = "v4.channel.k8s.io"
V3 = "v3.channel.k8s.io"
V2 = "v2.channel.k8s.io"
V5 = "v5.channel.k8s.io"
SPDY_PROTOCOLS = (V4, V3, V2)
WEBSOCKET_PROTOCOLS = (V5, V4)


class Source(Protocol):
    def read(self, n: int = ..., timeout: float | None = ...) -> bytes: ...


@dataclass(frozen=True)
class Options:
    """Which streams the request asked for."""

    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool

    def expected_streams(self, protocol: str) -> set[str]:
        """The SPDY streams a client creates under `protocol` (v2 has no resize)."""
        names = {STREAM_ERROR}
        if self.stdin:
            names.add(STREAM_STDIN)
        if self.stdout:
            names.add(STREAM_STDOUT)
        if self.stderr and not self.tty:
            names.add(STREAM_STDERR)
        if self.tty and protocol != V2:
            names.add(STREAM_RESIZE)
        return names


def encode_size(width: int, height: int) -> bytes:
    """One message of the resize stream."""
    return json.dumps({"Width": width, "Height": height}).encode()


class SizeStream:
    """(width, height) events from a stream of JSON objects {"Width": w, "Height": h}."""

    def __init__(self, source: Source) -> None:
        self._source = source
        self._decoder = json.JSONDecoder()
        self._buf = ""

    def next(self, timeout: float | None = None) -> tuple[int, int] | None:
        """The next size; None at EOF. Raises TimeoutError after `timeout`."""
        while True:
            self._buf = self._buf.lstrip()
            if self._buf:
                try:
                    obj, end = self._decoder.raw_decode(self._buf)
                except json.JSONDecodeError:
                    pass  # incomplete: read more
                else:
                    self._buf = self._buf[end:]
                    if isinstance(obj, dict):
                        try:
                            return int(obj.get("Width", 0)), int(obj.get("Height", 0))
                        except (TypeError, ValueError):
                            pass
                    continue
            data = self._source.read(4096, timeout)
            if not data:
                return None
            self._buf += data.decode(errors="replace")


def iter_sizes(source: Source) -> Iterator[tuple[int, int]]:
    sizes = SizeStream(source)
    while (size := sizes.next()) is not None:
        yield size
