"""WebSocket (RFC 6455) framing and the Kubernetes channel protocols on top of it.

Newer clients (client-go's WebSocket executor, kubectl >= 1.29) speak
remote-command over WebSocket with the subprotocols `v5.channel.k8s.io` and
`v4.channel.k8s.io`: every binary message starts with a channel byte (0 stdin,
1 stdout, 2 stderr, 3 error, 4 resize); v5 adds 255, a message `[255, n]`
that half-closes channel n. This module does the handshake arithmetic, the
frame codec (both roles: clients mask, servers do not) and
`ChannelConnection`, which demultiplexes incoming channels into buffers.
It must never interpret what the channels carry.
"""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass

from machinery.streaming.buffer import InboundBuffer
from machinery.streaming.transport import Reader, StreamError, read_exact

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

OP_CONTINUATION = 0x0
OP_TEXT = 0x1
OP_BINARY = 0x2
OP_CLOSE = 0x8
OP_PING = 0x9
OP_PONG = 0xA

CLOSE_NORMAL = 1000
CLOSE_PROTOCOL_ERROR = 1002

STDIN, STDOUT, STDERR, ERROR, RESIZE = 0, 1, 2, 3, 4
CLOSE_CHANNEL = 255

MAX_MESSAGE = 16 * 1024 * 1024
MAX_BUFFERED = 4 << 20  # unread bytes per input channel before the reader waits


def accept_key(key: str) -> str:
    """Sec-WebSocket-Accept for a client's Sec-WebSocket-Key."""
    digest = hashlib.sha1((key.strip() + GUID).encode()).digest()
    return base64.b64encode(digest).decode()


class WebSocketError(Exception):
    """The peer broke the WebSocket protocol."""


@dataclass(frozen=True)
class WsFrame:
    fin: bool
    opcode: int
    payload: bytes


def encode_frame(opcode: int, payload: bytes, *, mask: bool, fin: bool = True) -> bytes:
    head = bytearray([(0x80 if fin else 0) | opcode])
    mask_bit = 0x80 if mask else 0
    n = len(payload)
    if n < 126:
        head.append(mask_bit | n)
    elif n < 1 << 16:
        head.append(mask_bit | 126)
        head += struct.pack(">H", n)
    else:
        head.append(mask_bit | 127)
        head += struct.pack(">Q", n)
    if not mask:
        return bytes(head) + payload
    key = os.urandom(4)
    return bytes(head) + key + _apply_mask(payload, key)


def _apply_mask(data: bytes, key: bytes) -> bytes:
    if not data:
        return b""
    n = len(data)
    repeated = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "little") ^ int.from_bytes(repeated, "little")).to_bytes(
        n, "little"
    )


def read_frame(reader: Reader, *, expect_masked: bool | None) -> WsFrame:
    """One frame. `expect_masked` True for a server reading a client, False for
    a client reading a server, None to accept either."""
    b0, b1 = read_exact(reader, 2)
    if b0 & 0x70:
        raise WebSocketError("reserved bits set (no extension was negotiated)")
    masked = bool(b1 & 0x80)
    if expect_masked is not None and masked != expect_masked:
        raise WebSocketError("frame masking does not match the peer's role")
    n = b1 & 0x7F
    if n == 126:
        (n,) = struct.unpack(">H", read_exact(reader, 2))
    elif n == 127:
        (n,) = struct.unpack(">Q", read_exact(reader, 8))
    if n > MAX_MESSAGE:
        raise WebSocketError("frame too large")
    key = read_exact(reader, 4) if masked else b""
    payload = read_exact(reader, n)
    if masked:
        payload = _apply_mask(payload, key)
    return WsFrame(bool(b0 & 0x80), b0 & 0x0F, payload)


class WebSocket:
    """A message-level WebSocket over a connected socket (either role)."""

    def __init__(self, reader: Reader, sock: socket.socket, *, client: bool) -> None:
        self._reader = reader
        self._sock = sock
        self._client = client
        self._wlock = threading.Lock()
        self._close_sent = False
        self.close_received = False

    def send(self, payload: bytes, opcode: int = OP_BINARY) -> None:
        with self._wlock:
            if self._close_sent:
                raise StreamError("websocket is closing")
            try:
                self._sock.sendall(encode_frame(opcode, payload, mask=self._client))
            except OSError as exc:
                raise StreamError(f"websocket write failed: {exc}") from exc

    def send_close(self, code: int = CLOSE_NORMAL, reason: str = "") -> None:
        with self._wlock:
            if self._close_sent:
                return
            self._close_sent = True
            try:
                self._sock.sendall(self._close_frame(code, reason))
            except OSError:
                pass

    def send_last(self, payload: bytes, opcode: int = OP_BINARY) -> None:
        """A final message and the close frame in one write, so that they
        reach the peer together (kube-apiserver writes the close frame right
        after an exec's status): a client that stops reading at that message
        (lightkube's returns on the status) finds the close frame in the same
        read instead of leaving a read pending on a socket it then closes."""
        with self._wlock:
            if self._close_sent:
                raise StreamError("websocket is closing")
            self._close_sent = True
            frames = encode_frame(opcode, payload, mask=self._client) + self._close_frame()
            try:
                self._sock.sendall(frames)
            except OSError as exc:
                raise StreamError(f"websocket write failed: {exc}") from exc

    def _close_frame(self, code: int = CLOSE_NORMAL, reason: str = "") -> bytes:
        payload = struct.pack(">H", code) + reason.encode()
        return encode_frame(OP_CLOSE, payload, mask=self._client)

    def recv(self) -> tuple[int, bytes] | None:
        """The next data message (opcode, payload); None once closed.
        Answers pings and close frames itself."""
        parts: list[bytes] = []
        opcode = None
        while True:
            frame = read_frame(self._reader, expect_masked=not self._client)
            if frame.opcode == OP_PING:
                try:
                    self.send(frame.payload, OP_PONG)
                except StreamError:
                    pass
                continue
            if frame.opcode == OP_PONG:
                continue
            if frame.opcode == OP_CLOSE:
                self.close_received = True
                self.send_close()
                return None
            if frame.opcode == OP_CONTINUATION:
                if opcode is None:
                    raise WebSocketError("continuation without a message")
            elif opcode is not None:
                raise WebSocketError("new message inside a fragmented one")
            else:
                opcode = frame.opcode
            parts.append(frame.payload)
            if sum(map(len, parts)) > MAX_MESSAGE:
                raise WebSocketError("message too large")
            if frame.fin:
                return opcode, b"".join(parts)


class ChannelConnection:
    """Kubernetes channel framing over a WebSocket, server side.

    A reader thread routes incoming messages on `inputs` channels into
    buffers; writes prefix the channel byte. `gone` is set when the transport
    ends (close frame, EOF or error)."""

    def __init__(self, ws: WebSocket, inputs: tuple[int, ...], *, v5: bool) -> None:
        self.ws = ws
        self.v5 = v5
        self.inputs: dict[int, InboundBuffer] = {
            ch: InboundBuffer(limit=MAX_BUFFERED) for ch in inputs
        }
        self.gone = threading.Event()
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="ws-channels", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def on_gone(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if not self.gone.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def write(self, channel: int, data: bytes) -> None:
        self.ws.send(bytes([channel]) + data)

    def write_last(self, channel: int, data: bytes) -> None:
        """The session's last message, with the close frame (WebSocket.send_last)."""
        self.ws.send_last(bytes([channel]) + data)

    def abort_inputs(self) -> None:
        for buf in self.inputs.values():
            buf.abort()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            while True:
                message = self.ws.recv()
                if message is None:
                    break
                _opcode, data = message
                if not data:
                    continue
                channel, body = data[0], data[1:]
                if channel == CLOSE_CHANNEL and self.v5:
                    if body and body[0] in self.inputs:
                        self.inputs[body[0]].close()
                    continue
                buf = self.inputs.get(channel)
                if buf is not None:
                    buf.feed(body)
        except (EOFError, OSError, WebSocketError, ValueError):
            pass
        finally:
            with self._lock:
                self.gone.set()
                callbacks, self._callbacks = self._callbacks, []
            for buf in self.inputs.values():
                buf.abort()
            for callback in callbacks:
                callback()


class ChannelSink:
    """A write side of one channel, shaped like a stream (write/close).

    With `last`, the channel carries one message that ends the session (the
    error channel's status: Kubernetes closes the WebSocket right after it),
    sent together with the close frame."""

    def __init__(self, conn: ChannelConnection, channel: int, *, last: bool = False) -> None:
        self._conn = conn
        self._channel = channel
        self._last = last

    def write(self, data: bytes) -> None:
        if data and self._last:
            self._conn.write_last(self._channel, data)
        elif data:
            self._conn.write(self._channel, data)

    def close(self) -> None:
        """Output channels end with the connection; nothing to send."""
