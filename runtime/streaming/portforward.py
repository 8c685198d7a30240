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
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from machinery.streaming.portforward import (
    HEADER_PORT,
    HEADER_REQUEST_ID,
    HEADER_STREAM_TYPE,
    PROTOCOL,
    STREAM_DATA,
    STREAM_ERROR,
)
from machinery.streaming.pump import socket_to_stream, stream_to_socket
from machinery.streaming.spdy import PROTOCOL_ERROR, SpdySession, SpdyStream

log = logging.getLogger("skiff.runtime.streaming")

__all__ = ["PROTOCOL", "Dialer", "serve"]

Dialer = Callable[[int], socket.socket]


@dataclass
class _Pair:
    port: int
    created: float
    error: SpdyStream | None = None
    data: SpdyStream | None = None


@dataclass
class _Forwards:
    lock: threading.Lock = field(default_factory=threading.Lock)
    sockets: set[socket.socket] = field(default_factory=set)
    threads: list[threading.Thread] = field(default_factory=list)
    closed: bool = False


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

    def shut_all() -> None:
        with forwards.lock:
            forwards.closed = True
            live = list(forwards.sockets)
        for sock in live:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

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

    session.on_close(shut_all)
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
        shut_all()
        with forwards.lock:
            threads = list(forwards.threads)
        for thread in threads:
            thread.join()


def _forward(pair: _Pair, dial: Dialer, forwards: _Forwards, sandbox_id: str) -> None:
    assert pair.error is not None and pair.data is not None
    error, data = pair.error, pair.data
    try:
        sock = dial(pair.port)
    except Exception as exc:
        message = f"error forwarding port {pair.port} to pod {sandbox_id}, uid : {exc}"
        log.info("port-forward dial failed", extra={"pod": sandbox_id, "error": str(exc)})
        try:
            error.write(message.encode())
        except OSError:
            pass
        error.close()
        data.close()
        return
    # A socket received over SCM_RIGHTS keeps the sender's O_NONBLOCK (file
    # status flags are shared); the copy loops below need a blocking one.
    sock.setblocking(True)
    with forwards.lock:
        if forwards.closed:
            sock.close()
            return
        forwards.sockets.add(sock)

    def client_to_pod() -> None:
        try:
            stream_to_socket(data, sock)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    upstream = threading.Thread(target=client_to_pod, daemon=True, name="port-forward-in")
    upstream.start()
    try:
        socket_to_stream(sock, data)
    finally:
        data.close()
        error.close()
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        data.inbound.abort()
        upstream.join()
        with forwards.lock:
            forwards.sockets.discard(sock)
        sock.close()
