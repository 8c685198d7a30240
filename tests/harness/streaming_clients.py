"""Our own clients of the streaming protocols, for tests.

`SpdyClient` speaks remote-command and port-forward over SPDY/3.1 the way
client-go does (HTTP upgrade, one SPDY stream per channel, paired streams for
port-forward); `WsClient` speaks the WebSocket channel protocols (v4/v5).
They reuse the frame codecs of machinery.streaming but build the HTTP requests,
stream sets and channel bytes themselves.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import threading
from dataclasses import dataclass, field
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from machinery.streaming import websocket
from machinery.streaming.spdy import SpdySession, SpdyStream
from machinery.streaming.transport import StreamError


@dataclass
class HttpReply:
    status: int
    headers: dict[str, str]
    body: bytes = b""


def _connect(
    url: str, headers: list[tuple[str, str]], method: str = "POST"
) -> tuple[HttpReply, socket.socket | None, BinaryIO | None]:
    parts = urlsplit(url)
    assert parts.hostname == "127.0.0.1", url
    sock = socket.create_connection((parts.hostname, parts.port or 80), timeout=10)
    sock.settimeout(None)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    lines = [f"{method} {path} HTTP/1.1", f"Host: {parts.netloc}", "Content-Length: 0"]
    lines += [f"{k}: {v}" for k, v in headers]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    rfile = sock.makefile("rb")
    status_line = rfile.readline().decode()
    status = int(status_line.split()[1])
    reply_headers: dict[str, str] = {}
    while True:
        line = rfile.readline().decode()
        if line in ("\r\n", "\n", ""):
            break
        name, _, value = line.partition(":")
        reply_headers[name.strip().lower()] = value.strip()
    reply = HttpReply(status, reply_headers)
    if status != 101:
        n = int(reply_headers.get("content-length", "0"))
        reply.body = rfile.read(n) if n else b""
        rfile.close()
        sock.close()
        return reply, None, None
    return reply, sock, rfile


def http_get(url: str) -> HttpReply:
    reply, _, _ = _connect(url, [], method="GET")
    return reply


def _read_all(stream: SpdyStream | None, out: bytearray) -> None:
    if stream is None:
        return
    while True:
        data = stream.read()
        if not data:
            return
        out += data


@dataclass
class ExecResult:
    stdout: bytes
    stderr: bytes
    error: bytes

    @property
    def status(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.error) if self.error else {}
        return parsed


class SpdyClient:
    """One upgraded SPDY connection to the streaming server."""

    def __init__(self, url: str, protocols: tuple[str, ...], *, like_go: bool = False) -> None:
        """`like_go`: neither send SETTINGS nor honour windows, as spdystream."""
        headers = [("Connection", "Upgrade"), ("Upgrade", "SPDY/3.1")]
        headers += [("X-Stream-Protocol-Version", p) for p in protocols]
        self.reply, sock, rfile = _connect(url, headers)
        self.session: SpdySession | None = None
        self.sock = sock
        self.rfile = rfile
        if sock is not None and rfile is not None:
            self.session = SpdySession(rfile, sock, client=True, honour_windows=not like_go)
            self.session.start()
            if not like_go:
                try:
                    self.session.send_settings()
                except StreamError:
                    pass  # the server already gave up on us (tests of its timeouts)

    def open(self, **headers: str) -> SpdyStream:
        assert self.session is not None, self.reply
        return self.session.open_stream({k.lower(): [v] for k, v in headers.items()})

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
        if self.rfile is not None:
            self.rfile.close()

    def abort(self) -> None:
        """Vanish like a killed client: RST the TCP connection."""
        assert self.sock is not None
        self.sock.setsockopt(
            socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
        )
        self.close()


@dataclass
class RemoteCommand:
    """The streams of one remote command, opened in client-go's order."""

    client: SpdyClient
    tty: bool
    error: SpdyStream
    stdin: SpdyStream | None
    stdout: SpdyStream | None
    stderr: SpdyStream | None
    resize: SpdyStream | None
    outputs: dict[str, bytearray] = field(default_factory=dict)
    readers: list[threading.Thread] = field(default_factory=list)

    @classmethod
    def open(
        cls,
        url: str,
        *,
        stdin: bool = False,
        stdout: bool = True,
        stderr: bool = True,
        tty: bool = False,
        protocol: str = "v4.channel.k8s.io",
        like_go: bool = False,
    ) -> RemoteCommand:
        client = SpdyClient(url, (protocol,), like_go=like_go)
        assert client.reply.status == 101, client.reply
        assert client.reply.headers["x-stream-protocol-version"] == protocol
        error = client.open(streamType="error")
        rc = cls(
            client,
            tty,
            error,
            client.open(streamType="stdin") if stdin else None,
            client.open(streamType="stdout") if stdout else None,
            client.open(streamType="stderr") if stderr and not tty else None,
            client.open(streamType="resize") if tty and protocol != "v2.channel.k8s.io" else None,
        )
        for name in ("error", "stdout", "stderr"):
            buf = rc.outputs.setdefault(name, bytearray())
            thread = threading.Thread(target=_read_all, args=(getattr(rc, name), buf), daemon=True)
            thread.start()
            rc.readers.append(thread)
        return rc

    def send_resize(self, width: int, height: int) -> None:
        assert self.resize is not None
        self.resize.write(json.dumps({"Width": width, "Height": height}).encode())

    def finish(self, timeout: float = 20.0) -> ExecResult:
        for thread in self.readers:
            thread.join(timeout)
            assert not thread.is_alive(), "server did not finish the streams"
        self.client.close()
        return ExecResult(
            bytes(self.outputs["stdout"]),
            bytes(self.outputs["stderr"]),
            bytes(self.outputs["error"]),
        )


def spdy_exec(url: str, stdin: bytes | None = None, **kw) -> ExecResult:
    rc = RemoteCommand.open(url, stdin=stdin is not None, **kw)
    if stdin is not None:
        assert rc.stdin is not None
        rc.stdin.write(stdin)
        rc.stdin.close()
    return rc.finish()


class PortForwardClient:
    """SPDY port-forward: one (error, data) stream pair per connection."""

    def __init__(self, url: str) -> None:
        self.client = SpdyClient(url, ("portforward.k8s.io",))
        assert self.client.reply.status == 101, self.client.reply
        self._next = 0

    def connect(self, port: int) -> tuple[SpdyStream, SpdyStream]:
        rid = str(self._next)
        self._next += 1
        error = self.client.open(streamType="error", port=str(port), requestID=rid)
        error.close()  # client-go never writes to the error stream
        data = self.client.open(streamType="data", port=str(port), requestID=rid)
        return error, data

    def close(self) -> None:
        self.client.close()


def read_to_eof(stream: SpdyStream, timeout: float = 10.0) -> bytes:
    out = bytearray()
    while True:
        data = stream.read(timeout=timeout)
        if not data:
            return bytes(out)
        out += data


class WsClient:
    """A WebSocket client of remote command and port-forward (channel framing)."""

    def __init__(
        self, url: str, protocols: tuple[str, ...] = ("v5.channel.k8s.io", "v4.channel.k8s.io")
    ) -> None:
        key = base64.b64encode(os.urandom(16)).decode()
        headers = [
            ("Connection", "Upgrade"),
            ("Upgrade", "websocket"),
            ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", key),
        ]
        if protocols:  # none: as kr8s asks for port-forward
            headers.append(("Sec-WebSocket-Protocol", ", ".join(protocols)))
        self.reply, self.sock, self.rfile = _connect(
            url.replace("ws://", "http://"), headers, method="GET"
        )
        self.ws: websocket.WebSocket | None = None
        if self.sock is not None and self.rfile is not None:
            assert self.reply.headers["sec-websocket-accept"] == websocket.accept_key(key)
            self.protocol = self.reply.headers.get("sec-websocket-protocol", "")
            self.ws = websocket.WebSocket(self.rfile, self.sock, client=True)

    def send(self, channel: int, data: bytes) -> None:
        assert self.ws is not None
        self.ws.send(bytes([channel]) + data)

    def close_stdin(self) -> None:
        self.send(websocket.CLOSE_CHANNEL, bytes([websocket.STDIN]))

    def resize(self, width: int, height: int) -> None:
        self.send(websocket.RESIZE, json.dumps({"Width": width, "Height": height}).encode())

    def read_until(self, channel: int, needle: bytes, outputs: dict[int, bytearray]) -> None:
        assert self.ws is not None
        while needle not in outputs.get(channel, b""):
            message = self.ws.recv()
            assert message is not None, f"closed before {needle!r} on channel {channel}: {outputs}"
            _, data = message
            if data:
                outputs.setdefault(data[0], bytearray()).extend(data[1:])

    def collect(self, outputs: dict[int, bytearray] | None = None) -> dict[int, bytes]:
        """Read messages until the server closes; bytes per channel."""
        assert self.ws is not None
        outputs = {} if outputs is None else outputs
        while True:
            try:
                message = self.ws.recv()
            except EOFError:
                break
            if message is None:
                break
            _, data = message
            if data:
                outputs.setdefault(data[0], bytearray()).extend(data[1:])
        self.close()
        return {k: bytes(v) for k, v in outputs.items()}

    def frames_unanswered(self, timeout: float) -> tuple[list[websocket.WsFrame], bool]:
        """The frames the server sends up to its close frame, read as a client
        that never answers with its own; and whether the server's end of the
        stream followed within `timeout` (a read then waits at most that).
        Closes the client."""
        assert self.sock is not None and self.rfile is not None
        frames: list[websocket.WsFrame] = []
        try:
            while not frames or frames[-1].opcode != websocket.OP_CLOSE:
                frames.append(websocket.read_frame(self.rfile, expect_masked=False))
            self.sock.settimeout(timeout)
            try:
                ended = self.rfile.read(1) == b""
            except TimeoutError:
                ended = False
        finally:
            self.close()
        return frames, ended

    def close(self) -> None:
        if self.rfile is not None:
            self.rfile.close()
        if self.sock is not None:
            self.sock.close()
