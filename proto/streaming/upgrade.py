"""The server side of an HTTP/1.1 connection upgrade (SPDY/3.1, WebSocket).

`UpgradeServer` runs a threaded HTTP/1.1 listener whose handlers read the
request line and headers under a request timeout, answer either a short
plain-text error or `101 Switching Protocols`, and then own the socket for
the upgraded session (under an idle timeout). It tracks every live
connection so `stop()` can end them at once (RST, not a lingering close),
run the closers a session registered to unblock its readers, and join every
thread it started.

A server subclasses `UpgradeHandler` and implements `dispatch()`; what it
serves (the owner: a streaming server, a proxy) is `self.server.owner`.
Standard library only; used by the runtime's streaming server.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import socketserver
import struct
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

log = logging.getLogger("skiff.streaming.http")


def header_values(values: list[str]) -> list[str]:
    """The comma-separated values of a header that may repeat, in order."""
    out: list[str] = []
    for value in values:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return out


class _TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = True

    def __init__(
        self, addr: tuple[str, int], handler: type[UpgradeHandler], upgrade: UpgradeServer
    ) -> None:
        self.upgrade = upgrade
        self.owner = upgrade.owner
        super().__init__(addr, handler)


class UpgradeHandler(BaseHTTPRequestHandler):
    """One connection: GET and POST go to `dispatch()`."""

    server: _TCPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http: " + format, *args)

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.upgrade.request_timeout)
        self.server.upgrade.track(self.connection, True)

    def finish(self) -> None:
        self.server.upgrade.track(self.connection, False)
        with contextlib.suppress(OSError):
            super().finish()

    def do_GET(self) -> None:
        self.dispatch()

    def do_POST(self) -> None:
        self.dispatch()

    def dispatch(self) -> None:
        raise NotImplementedError

    def plain(self, code: int, text: str, extra: dict[str, list[str]] | None = None) -> None:
        """A short text/plain answer, and the connection closes after it."""
        body = (text + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        for name, values in (extra or {}).items():
            for value in values:
                self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def switch_protocols(self, headers: list[tuple[str, str]], idle_timeout: float | None) -> None:
        """Answer 101 with `headers`; the socket is the session's from here, and
        a read or write that waits longer than `idle_timeout` ends it."""
        lines = ["HTTP/1.1 101 Switching Protocols"] + [f"{k}: {v}" for k, v in headers]
        self.connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.close_connection = True
        self.connection.settimeout(idle_timeout)

    def on_stop(self, closer: Callable[[], None]) -> None:
        """Have the server's `stop()` also call `closer` (to unblock this session's readers)."""
        self.server.upgrade.on_stop(self.connection, closer)


class UpgradeServer:
    """See the module docstring. `owner` is what the handlers serve."""

    def __init__(
        self,
        handler: type[UpgradeHandler],
        owner: Any,
        *,
        request_timeout: float,
        name: str,
    ) -> None:
        self.handler = handler
        self.owner = owner
        self.request_timeout = request_timeout
        self.name = name
        self._tcp: _TCPServer | None = None
        self._thread: threading.Thread | None = None
        self._conns_lock = threading.Lock()
        self._conns: dict[socket.socket, list[Callable[[], None]]] = {}

    def start(self, address: str, port: int) -> None:
        self._tcp = _TCPServer((address, port), self.handler, self)
        self._thread = threading.Thread(
            target=self._tcp.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=self.name,
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        if self._tcp is None:
            return
        self._tcp.shutdown()
        with self._conns_lock:
            live = list(self._conns.items())
        for conn, closers in live:
            try:
                # abort, do not linger: the peer learns at once (RST on close)
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            for closer in closers:
                closer()
        self._tcp.server_close()  # joins the connection threads (block_on_close)
        if self._thread is not None:
            self._thread.join()
        self._tcp = None

    @property
    def started(self) -> bool:
        return self._tcp is not None

    @property
    def port(self) -> int:
        if self._tcp is None:
            raise RuntimeError(f"{self.name} is not started")
        return int(self._tcp.server_address[1])

    def track(self, conn: socket.socket, live: bool) -> None:
        with self._conns_lock:
            if live:
                self._conns[conn] = []
            else:
                self._conns.pop(conn, None)

    def on_stop(self, conn: socket.socket, closer: Callable[[], None]) -> None:
        with self._conns_lock:
            if conn in self._conns:
                self._conns[conn].append(closer)
