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

`StrictRequestHandler`, its base, is the one reader of request heads for
every HTTP/1.1 endpoint that takes requests from outside (here, and the
agent's stream proxy): a request line that is not `METHOD SP target SP
HTTP/1.x` is answered 400 (505 for another HTTP version; never an HTTP/0.9
answer without a status line), and so are obsolete line folding, a bare CR
or LF, control characters in a field, duplicate Host, Transfer-Encoding
and Content-Length that is not one agreed 0 (an upgrade request carries no
body; a second framing is how requests are smuggled); a head over
`MAX_HEAD` bytes or `MAX_FIELDS` fields is 431.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import logging
import re
import socket
import socketserver
import struct
import threading
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

log = logging.getLogger("skiff.streaming.http")


def header_values(values: list[str]) -> list[str]:
    """The comma-separated values of a header that may repeat, in order."""
    out: list[str] = []
    for value in values:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return out


MAX_HEAD = 32 * 1024  # request line and header fields, bytes
MAX_FIELDS = 100

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 token (method, field name)
_TARGET = re.compile(rb"[\x21-\x7e]+")  # visible ASCII, no space or control
_VERSION = re.compile(rb"HTTP/([0-9])\.[0-9]")
_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")  # controls but HTAB, in a field value


class BadHead(Exception):
    """A request head refused with an HTTP status; the message names the part."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def request_line(line: bytes) -> tuple[str, str, str]:
    """(method, target, version) of `METHOD SP target SP HTTP/1.x CRLF`."""
    if not line.endswith(b"\r\n") or b"\r" in line[:-2]:
        raise BadHead(400, "request line: must end with CRLF, without a bare CR")
    words = line[:-2].split(b" ")
    if len(words) != 3:
        raise BadHead(400, "request line: must be METHOD SP request-target SP HTTP/1.x")
    method, target, version = words
    if not _TOKEN.fullmatch(method):
        raise BadHead(400, "request line: method: not a token")
    if not _TARGET.fullmatch(target):
        raise BadHead(400, "request line: request-target: only visible ASCII is allowed")
    matched = _VERSION.fullmatch(version)
    if matched is None:
        raise BadHead(400, "request line: version: must be HTTP/1.x")
    if matched.group(1) != b"1":
        raise BadHead(505, f"HTTP version not supported: {version.decode('latin-1')}")
    return method.decode(), target.decode(), version.decode()


class _Lines(Protocol):
    def readline(self, size: int = ..., /) -> bytes: ...


def header_fields(rfile: _Lines, budget: int) -> list[tuple[str, str]]:
    """The header fields up to the empty line, read from `rfile` within
    `budget` bytes; BadHead for anything RFC 9112 lets a server refuse."""
    fields: list[tuple[str, str]] = []
    while True:
        if budget < 0:
            raise BadHead(431, "request header fields too large")
        line = rfile.readline(budget + 1)
        budget -= len(line)
        if budget < 0 or len(fields) > MAX_FIELDS:
            raise BadHead(431, "request header fields too large")
        if not line.endswith(b"\r\n"):
            raise BadHead(400, "header: every line must end with CRLF (no bare LF)")
        text = line[:-2]
        if not text:
            return fields
        if text[:1] in (b" ", b"\t"):
            raise BadHead(400, "header: obsolete line folding is not allowed")
        name, colon, value = text.partition(b":")
        if not colon or not _TOKEN.fullmatch(name):
            raise BadHead(400, f"header {name[:64]!r}: not a field name followed by a colon")
        value = value.strip(b" \t")
        if _CONTROL.search(value):
            raise BadHead(400, f"header {name.decode()}: control character (bare CR?) in value")
        fields.append((name.decode(), value.decode("latin-1")))


def check_framing(fields: list[tuple[str, str]]) -> None:
    """No body, one way of saying so, and at most one Host."""
    names = [name.lower() for name, _ in fields]
    if names.count("host") > 1:
        raise BadHead(400, "Host: more than one")
    if "transfer-encoding" in names:
        raise BadHead(400, "Transfer-Encoding: not accepted (this request carries no body)")
    lengths = {
        part.strip()
        for name, value in fields
        if name.lower() == "content-length"
        for part in value.split(",")
    }
    if len(lengths) > 1:
        raise BadHead(400, f"Content-Length: conflicting values {sorted(lengths)}")
    if lengths and lengths != {"0"}:
        (length,) = lengths
        if not length.isdigit():
            raise BadHead(400, f"Content-Length: {length!r} is not a number")
        raise BadHead(400, "Content-Length: must be 0 (this request carries no body)")


class StrictRequestHandler(BaseHTTPRequestHandler):
    """A BaseHTTPRequestHandler whose request heads are read strictly (see
    the module docstring); `plain()` answers in short text."""

    protocol_version = "HTTP/1.1"
    raw_requestline: bytes  # set by handle_one_request before parse_request

    def parse_request(self) -> bool:
        self.request_version = "HTTP/1.1"  # so that even a refusal has a status line
        self.close_connection = True
        line = self.raw_requestline
        self.requestline = line.rstrip(b"\r\n").decode("latin-1")
        try:
            method, target, version = request_line(line)
            fields = header_fields(self.rfile, MAX_HEAD - len(line))
            check_framing(fields)
        except BadHead as err:
            log.info("http: refused a request head: %d %s", err.code, err)
            self.plain(err.code, str(err))
            return False
        self.command, self.path, self.request_version = method, target, version
        block = "".join(f"{name}: {value}\r\n" for name, value in fields) + "\r\n"
        self.headers = http.client.parse_headers(io.BytesIO(block.encode("latin-1")))
        connection = {v.lower() for v in header_values(self.headers.get_all("Connection") or [])}
        self.close_connection = "close" in connection or version == "HTTP/1.0"
        return True

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


class UpgradeHandler(StrictRequestHandler):
    """One connection: GET and POST go to `dispatch()`."""

    server: _TCPServer

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


@dataclass(eq=False)
class UpgradeServer:
    """See the module docstring. `owner` is what the handlers serve."""

    handler: type[UpgradeHandler]
    owner: Any
    _: KW_ONLY
    request_timeout: float
    name: str
    _tcp: _TCPServer | None = field(default=None, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)
    _conns_lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _conns: dict[socket.socket, list[Callable[[], None]]] = field(default_factory=dict, init=False)

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
