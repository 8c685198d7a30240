"""The port-forward protocol (`portforward.k8s.io`) over a SPDY session.

The client opens streams in pairs that share a `requestID` header: an
`error` stream and a `data` stream, each with a `port` header. For every
complete pair the backend dials the port inside the sandbox's network
namespace and bytes are copied both ways: the client's FIN on the data stream
half-closes the socket, the socket's EOF finishes the data stream. A failure
to dial is written as text on the error stream, as kubelet does. Many pairs
run at once on one session. When the session ends every socket is shut down
and closed. This module must never dial anything itself.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from machinery.streaming.portforward import (
    HEADER_PORT,
    HEADER_REQUEST_ID,
    HEADER_STREAM_TYPE,
    PROTOCOL,
    STREAM_DATA,
    STREAM_ERROR,
)
from machinery.streaming.spdy import PROTOCOL_ERROR, SpdySession, SpdyStream
from runtime.streaming.forwards import Dialer, Forwards

log = logging.getLogger("skiff.runtime.streaming")

__all__ = ["PROTOCOL", "Dialer", "serve"]


@dataclass
class _Pair:
    port: int
    created: float
    error: SpdyStream | None = None
    data: SpdyStream | None = None


class _Forwards(Forwards):
    def __init__(self) -> None:
        super().__init__()
        self.threads: list[threading.Thread] = []


def _request_id(stream: SpdyStream, kind: str) -> str:
    """The pairing key; old clients without requestID pair error n with data n+2."""
    rid = stream.header(HEADER_REQUEST_ID)
    if rid:
        return rid
    return str(stream.stream_id if kind == STREAM_ERROR else stream.stream_id - 2)


def serve(
    session: SpdySession,
    dial: Dialer,
    sandbox_id: str = "",
    pair_timeout: float = 30.0,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Accept stream pairs until the session ends; return with nothing left open.
    Half a pair still alone after `pair_timeout` is reset, as kubelet does."""
    pairs: dict[str, _Pair] = {}
    forwards = _Forwards()

    def expire_halves() -> float | None:
        """Reset lone halves past their time; seconds until the next expiry."""
        now = clock()
        for rid, pair in list(pairs.items()):
            if now - pair.created >= pair_timeout:
                del pairs[rid]
                for half in (pair.error, pair.data):
                    if half is not None:
                        half.cancel()
        if not pairs:
            return None
        return max(0.0, min(p.created for p in pairs.values()) + pair_timeout - now)

    session.on_close(forwards.shut_all)
    try:
        while True:
            stream = session.accept_stream(timeout=expire_halves())
            if stream is None:
                if session.closed.is_set():
                    break
                continue
            kind = stream.header(HEADER_STREAM_TYPE)
            try:
                port = int(stream.header(HEADER_PORT))
                if not 0 < port < 65536:
                    raise ValueError(port)
            except ValueError:
                log.info("port-forward stream without a valid port", extra={"pod": sandbox_id})
                stream.cancel(PROTOCOL_ERROR)
                continue
            if kind not in (STREAM_ERROR, STREAM_DATA):
                stream.cancel(PROTOCOL_ERROR)
                continue
            rid = _request_id(stream, kind)
            pair = pairs.setdefault(rid, _Pair(port, clock()))
            if getattr(pair, kind) is not None:
                stream.cancel(PROTOCOL_ERROR)
                continue
            setattr(pair, kind, stream)
            if pair.error is not None and pair.data is not None:
                del pairs[rid]
                thread = threading.Thread(
                    target=_forward,
                    args=(pair, dial, forwards, sandbox_id),
                    daemon=True,
                    name="port-forward",
                )
                with forwards.lock:
                    forwards.threads.append(thread)
                thread.start()
    finally:
        forwards.shut_all()
        with forwards.lock:
            threads = list(forwards.threads)
        for thread in threads:
            thread.join()


def _forward(pair: _Pair, dial: Dialer, forwards: _Forwards, sandbox_id: str) -> None:
    assert pair.error is not None and pair.data is not None
    error, data = pair.error, pair.data

    def failed(message: bytes) -> None:
        try:
            error.write(message)
        finally:
            error.close()
            data.close()

    def finished() -> None:
        data.close()
        error.close()

    sock = forwards.connect(dial, pair.port, sandbox_id, failed)
    if sock is not None:
        forwards.copy(sock, data, data, data.inbound.abort, finished)
