"""SPDY/3.1 framing and a threaded session, as the Kubernetes streaming protocols use it.

client-go and crictl multiplex remote-command and port-forward streams over a
SPDY/3.1 connection obtained by an HTTP `Upgrade: SPDY/3.1`. This module has
the frame codec (control frames SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS,
PING, GOAWAY, HEADERS, WINDOW_UPDATE, and data frames), the zlib header
compression with the SPDY/3 dictionary, and `SpdySession`, which runs one
reader thread per connection and gives out `SpdyStream`s to read and write.
Both roles are supported (the server's and, for tests, the client's).

Flow control: received data is acknowledged with WINDOW_UPDATE frames (per
stream and, as SPDY/3.1 adds, for the session) as the consumer reads it.
Outgoing windows are always tracked but only enforced once the peer shows it
implements flow control, by sending SETTINGS or WINDOW_UPDATE: the Go
implementation (moby/spdystream) that kubelet, crictl and kubectl use never
sends either and would stall after 64 KiB otherwise.

This module must never interpret stream contents; that is remotecommand.py's
and portforward.py's job.
"""

from __future__ import annotations

import logging
import queue
import socket
import struct
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from proto.streaming.buffer import InboundBuffer

log = logging.getLogger("skiff.streaming.spdy")

VERSION = 3

SYN_STREAM = 1
SYN_REPLY = 2
RST_STREAM = 3
SETTINGS = 4
PING = 6
GOAWAY = 7
HEADERS = 8
WINDOW_UPDATE = 9

FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02

# RST_STREAM status codes
PROTOCOL_ERROR = 1
INVALID_STREAM = 2
REFUSED_STREAM = 3
CANCEL = 5
INTERNAL_ERROR = 6
FLOW_CONTROL_ERROR = 7

SETTINGS_INITIAL_WINDOW_SIZE = 7

DEFAULT_WINDOW = 65536
MAX_DATA_CHUNK = 32768
MAX_HEADER_BLOCK = 256 << 10  # one inflated header block (Go's net/http caps headers at 1 MiB)
MAX_FRAME_LENGTH = (1 << 24) - 1
MAX_BUFFERED = 4 << 20  # unread bytes per stream before the reader thread waits

# The SPDY/3 header compression dictionary (draft 3, section 2.6.10.1): a run
# of length-prefixed words followed by a run of raw text. Assembled below;
# tests check its length (1423) and SHA-256.
_DICTIONARY_WORDS = (
    "options head post put delete trace accept accept-charset accept-encoding "
    "accept-language accept-ranges age allow authorization cache-control "
    "connection content-base content-encoding content-language content-length "
    "content-location content-md5 content-range content-type date etag expect "
    "expires from host if-match if-modified-since if-none-match if-range "
    "if-unmodified-since last-modified location max-forwards pragma "
    "proxy-authenticate proxy-authorization range referer retry-after server te "
    "trailer transfer-encoding upgrade user-agent vary via warning "
    "www-authenticate method get status|200 OK|version|HTTP/1.1|url public "
    "set-cookie keep-alive origin"
)
_DICTIONARY_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414"
    "415416417502504505203 Non-Authoritative Information204 No Content301 Moved "
    "Permanently400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 "
    "Internal Server Error501 Not Implemented503 Service UnavailableJan Feb Mar "
    "Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, "
    "Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,application/xml,"
    "application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)


def _build_dictionary() -> bytes:
    words: list[str] = []
    for part in _DICTIONARY_WORDS.split("|"):
        if part in ("200 OK", "version", "HTTP/1.1"):
            words.append(part)
        else:
            words.extend(part.split())
    out = bytearray()
    for word in words:
        raw = word.encode()
        out += struct.pack(">I", len(raw)) + raw
    return bytes(out) + _DICTIONARY_TAIL.encode()


DICTIONARY = _build_dictionary()

Headers = dict[str, list[str]]


class ProtocolError(Exception):
    """The peer sent something that is not SPDY/3.1."""


class StreamError(OSError):
    """Writing to a stream that was reset, finished or whose session is gone."""


# ---------------------------------------------------------------- frames


@dataclass(frozen=True)
class DataFrame:
    stream_id: int
    data: bytes
    flags: int = 0


@dataclass(frozen=True)
class SynStream:
    stream_id: int
    headers: Headers
    flags: int = 0
    associated_id: int = 0
    priority: int = 0


@dataclass(frozen=True)
class SynReply:
    stream_id: int
    headers: Headers
    flags: int = 0


@dataclass(frozen=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True)
class Settings:
    entries: list[tuple[int, int, int]]  # (flags, id, value)
    flags: int = 0


@dataclass(frozen=True)
class Ping:
    ping_id: int


@dataclass(frozen=True)
class GoAway:
    last_good_stream_id: int
    status: int = 0


@dataclass(frozen=True)
class HeadersFrame:
    stream_id: int
    headers: Headers
    flags: int = 0


@dataclass(frozen=True)
class WindowUpdate:
    stream_id: int
    delta: int


@dataclass(frozen=True)
class UnknownControl:
    frame_type: int
    flags: int
    payload: bytes


Frame = (
    DataFrame
    | SynStream
    | SynReply
    | RstStream
    | Settings
    | Ping
    | GoAway
    | HeadersFrame
    | WindowUpdate
    | UnknownControl
)


def encode_header_block(headers: Headers) -> bytes:
    """The uncompressed name/value block: count, then length-prefixed pairs.
    Names are lowercased; several values of one name are NUL-separated."""
    out = bytearray(struct.pack(">I", len(headers)))
    for name, values in headers.items():
        raw_name = name.lower().encode()
        raw_value = "\x00".join(values).encode()
        out += struct.pack(">I", len(raw_name)) + raw_name
        out += struct.pack(">I", len(raw_value)) + raw_value
    return bytes(out)


def decode_header_block(block: bytes) -> Headers:
    headers: Headers = {}
    try:
        (count,) = struct.unpack_from(">I", block, 0)
        pos = 4
        for _ in range(count):
            (n,) = struct.unpack_from(">I", block, pos)
            name = block[pos + 4 : pos + 4 + n].decode().lower()
            pos += 4 + n
            (n,) = struct.unpack_from(">I", block, pos)
            value = block[pos + 4 : pos + 4 + n].decode()
            pos += 4 + n
            headers.setdefault(name, []).extend(value.split("\x00"))
    except (struct.error, UnicodeDecodeError) as exc:
        raise ProtocolError(f"bad header block: {exc}") from exc
    return headers


class Framer:
    """Encodes and decodes frames; holds the two zlib contexts of a session.

    SPDY compresses every header block of a direction as one zlib stream, so
    frames must be encoded in the order they are written: callers serialise
    `encode` and the socket write under one lock.
    """

    def __init__(self) -> None:
        self._compress = zlib.compressobj(
            zlib.Z_BEST_COMPRESSION, zlib.DEFLATED, 15, 8, zdict=DICTIONARY
        )
        self._decompress = zlib.decompressobj(zdict=DICTIONARY)

    def _pack_headers(self, headers: Headers) -> bytes:
        block = encode_header_block(headers)
        return self._compress.compress(block) + self._compress.flush(zlib.Z_SYNC_FLUSH)

    def _unpack_headers(self, payload: bytes) -> Headers:
        try:
            # bounded: a few KiB of compressed zeros must not inflate to GiBs
            block = self._decompress.decompress(payload, MAX_HEADER_BLOCK + 1)
        except zlib.error as exc:
            raise ProtocolError(f"header decompression failed: {exc}") from exc
        if len(block) > MAX_HEADER_BLOCK or self._decompress.unconsumed_tail:
            raise ProtocolError(f"header block inflates to more than {MAX_HEADER_BLOCK} bytes")
        return decode_header_block(block)

    @staticmethod
    def _control(frame_type: int, flags: int, payload: bytes) -> bytes:
        if len(payload) > MAX_FRAME_LENGTH:
            raise ValueError("frame too long")
        return (
            struct.pack(">HHI", 0x8000 | VERSION, frame_type, (flags << 24) | len(payload))
            + payload
        )

    def encode(self, frame: Frame) -> bytes:
        if isinstance(frame, DataFrame):
            if len(frame.data) > MAX_FRAME_LENGTH:
                raise ValueError("frame too long")
            head = struct.pack(
                ">II", frame.stream_id & 0x7FFFFFFF, (frame.flags << 24) | len(frame.data)
            )
            return head + frame.data
        if isinstance(frame, SynStream):
            fixed = struct.pack(
                ">IIBB",
                frame.stream_id & 0x7FFFFFFF,
                frame.associated_id & 0x7FFFFFFF,
                (frame.priority & 0x7) << 5,
                0,
            )
            return self._control(SYN_STREAM, frame.flags, fixed + self._pack_headers(frame.headers))
        if isinstance(frame, SynReply):
            fixed = struct.pack(">I", frame.stream_id & 0x7FFFFFFF)
            return self._control(SYN_REPLY, frame.flags, fixed + self._pack_headers(frame.headers))
        if isinstance(frame, HeadersFrame):
            fixed = struct.pack(">I", frame.stream_id & 0x7FFFFFFF)
            return self._control(HEADERS, frame.flags, fixed + self._pack_headers(frame.headers))
        if isinstance(frame, RstStream):
            return self._control(
                RST_STREAM, 0, struct.pack(">II", frame.stream_id & 0x7FFFFFFF, frame.status)
            )
        if isinstance(frame, Settings):
            body = struct.pack(">I", len(frame.entries))
            for flags, ident, value in frame.entries:
                body += struct.pack(">II", (flags << 24) | (ident & 0xFFFFFF), value)
            return self._control(SETTINGS, frame.flags, body)
        if isinstance(frame, Ping):
            return self._control(PING, 0, struct.pack(">I", frame.ping_id))
        if isinstance(frame, GoAway):
            return self._control(
                GOAWAY, 0, struct.pack(">II", frame.last_good_stream_id & 0x7FFFFFFF, frame.status)
            )
        if isinstance(frame, WindowUpdate):
            return self._control(
                WINDOW_UPDATE,
                0,
                struct.pack(">II", frame.stream_id & 0x7FFFFFFF, frame.delta & 0x7FFFFFFF),
            )
        return self._control(frame.frame_type, frame.flags, frame.payload)

    def decode(self, head: bytes, payload: bytes) -> Frame:
        """Decode one frame from its 8-byte head and its payload."""
        first, second = struct.unpack(">II", head)
        flags = second >> 24
        if not first & 0x80000000:
            return DataFrame(first & 0x7FFFFFFF, payload, flags)
        version = (first >> 16) & 0x7FFF
        if version != VERSION:
            raise ProtocolError(f"unsupported SPDY version {version}")
        frame_type = first & 0xFFFF
        try:
            if frame_type == SYN_STREAM:
                sid, assoc, prio, _slot = struct.unpack_from(">IIBB", payload)
                headers = self._unpack_headers(payload[10:])
                return SynStream(sid & 0x7FFFFFFF, headers, flags, assoc & 0x7FFFFFFF, prio >> 5)
            if frame_type in (SYN_REPLY, HEADERS):
                (sid,) = struct.unpack_from(">I", payload)
                headers = self._unpack_headers(payload[4:])
                if frame_type == SYN_REPLY:
                    return SynReply(sid & 0x7FFFFFFF, headers, flags)
                return HeadersFrame(sid & 0x7FFFFFFF, headers, flags)
            if frame_type == RST_STREAM:
                sid, status = struct.unpack_from(">II", payload)
                return RstStream(sid & 0x7FFFFFFF, status)
            if frame_type == SETTINGS:
                (count,) = struct.unpack_from(">I", payload)
                entries = []
                for i in range(count):
                    word, value = struct.unpack_from(">II", payload, 4 + 8 * i)
                    entries.append((word >> 24, word & 0xFFFFFF, value))
                return Settings(entries, flags)
            if frame_type == PING:
                (ping_id,) = struct.unpack_from(">I", payload)
                return Ping(ping_id)
            if frame_type == GOAWAY:
                sid, status = struct.unpack_from(">II", payload)
                return GoAway(sid & 0x7FFFFFFF, status)
            if frame_type == WINDOW_UPDATE:
                sid, delta = struct.unpack_from(">II", payload)
                return WindowUpdate(sid & 0x7FFFFFFF, delta & 0x7FFFFFFF)
        except struct.error as exc:
            raise ProtocolError(f"short control frame type {frame_type}") from exc
        return UnknownControl(frame_type, flags, payload)


# ---------------------------------------------------------------- session


class Reader(Protocol):
    def read(self, n: int, /) -> bytes: ...


def _read_exact(reader: Reader, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = reader.read(n - len(out))
        if not chunk:
            raise EOFError
        out += chunk
    return out


@dataclass(eq=False)
class SpdyStream:
    """One stream of a session: read what the peer sends, write to the peer."""

    session: SpdySession
    stream_id: int
    headers: Headers
    inbound: InboundBuffer = field(init=False)
    send_window: int = DEFAULT_WINDOW
    local_closed: bool = False
    reset: bool = False
    replied: threading.Event = field(default_factory=threading.Event)
    _unacked: int = 0

    def __post_init__(self) -> None:
        self.inbound = InboundBuffer(on_consumed=self._consumed, limit=MAX_BUFFERED)

    def header(self, name: str) -> str:
        values = self.headers.get(name.lower())
        return values[0] if values else ""

    def read(self, n: int = 65536, timeout: float | None = None) -> bytes:
        """Up to `n` bytes; b"" once the peer finished, reset, or the session died."""
        return self.inbound.read(n, timeout)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = self.session._reserve(self, min(len(view), MAX_DATA_CHUNK))
            self.session._send(DataFrame(self.stream_id, bytes(view[:n])))
            view = view[n:]

    def close(self) -> None:
        """Half-close: a FIN; the peer may go on sending."""
        self.session._finish(self)

    def cancel(self, status: int = CANCEL) -> None:
        """RST_STREAM: abandon both directions."""
        self.session._reset(self, status)

    def _consumed(self, n: int) -> None:
        self.session._ack_session(n)
        with self.session._cond:
            self._unacked += n
            if self._unacked < DEFAULT_WINDOW // 2 or self.inbound.closed or self.reset:
                return
            delta, self._unacked = self._unacked, 0
        self.session._ack(self.stream_id, delta)


class SpdySession:
    """A SPDY/3.1 connection: one reader thread, writes from any thread."""

    def __init__(
        self,
        reader: Reader,
        sock: socket.socket,
        *,
        client: bool,
        name: str = "",
        honour_windows: bool = True,
    ) -> None:
        """`honour_windows=False` never waits on the peer's windows, as
        spdystream behaves; tests use it to imitate Go clients."""
        self._honour_windows = honour_windows
        self._reader = reader
        self._sock = sock
        self._client = client
        self._name = name or ("spdy-client" if client else "spdy-server")
        self._framer = Framer()
        self._wlock = threading.Lock()
        self._open_lock = threading.Lock()
        self._cond = threading.Condition()
        self._streams: dict[int, SpdyStream] = {}
        self._next_id = 1 if client else 2
        self._last_remote_id = 0
        self._initial_window = DEFAULT_WINDOW
        self._session_window = DEFAULT_WINDOW
        self._flow_control = False
        self._session_unacked = 0
        self._incoming: queue.Queue[SpdyStream | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._close_callbacks: list[Callable[[], None]] = []
        self.closed = threading.Event()
        self.peer_went_away = threading.Event()

    # -- lifecycle

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call `callback` (once, from the reader thread) when the transport is gone."""
        with self._cond:
            if not self.closed.is_set():
                self._close_callbacks.append(callback)
                return
        callback()

    def goaway(self) -> None:
        try:
            self._send(GoAway(self._last_remote_id))
        except OSError:
            pass

    def shutdown(self, linger: float = 5.0) -> None:
        """Graceful end: GOAWAY, stop writing, let the peer read and close,
        then close the socket. Waits at most `linger` for the peer."""
        self.goaway()
        try:
            self._sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self.closed.wait(linger)
        self.close()

    def abort_streams(self) -> None:
        """Drop unread data of every stream (and unblock a waiting reader thread)."""
        with self._cond:
            streams = list(self._streams.values())
        for stream in streams:
            stream.inbound.abort()

    def close(self) -> None:
        """Abrupt end: the socket is shut down and the reader thread finishes."""
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.abort_streams()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._sock.close()

    # -- streams

    def accept_stream(self, timeout: float | None = None) -> SpdyStream | None:
        """The next stream the peer opened; None on timeout or when the session ended."""
        try:
            stream = self._incoming.get(timeout=timeout)
        except queue.Empty:
            return None
        if stream is None:
            self._incoming.put(None)  # keep later callers from blocking
        return stream

    def open_stream(self, headers: Headers, timeout: float = 10.0, fin: bool = False) -> SpdyStream:
        """Open a stream and wait for the peer's SYN_REPLY. Safe from many threads:
        ids are taken and their SYN_STREAMs sent in one order, as the peer
        refuses an id lower than one it has already seen."""
        with self._open_lock:
            with self._cond:
                if self.closed.is_set():
                    raise StreamError("session closed")
                sid = self._next_id
                self._next_id += 2
                stream = SpdyStream(self, sid, headers, send_window=self._initial_window)
                self._streams[sid] = stream
            self._send(SynStream(sid, headers, FLAG_FIN if fin else 0))
        stream.local_closed = fin
        if not stream.replied.wait(timeout) or stream.reset:
            raise StreamError(f"stream {sid} was not accepted")
        return stream

    # -- writing

    def _send(self, frame: Frame) -> None:
        with self._wlock:
            if self.closed.is_set():
                raise StreamError("session closed")
            data = self._framer.encode(frame)
            try:
                self._sock.sendall(data)
            except OSError as exc:
                raise StreamError(f"session write failed: {exc}") from exc

    def send_settings(self, initial_window: int = DEFAULT_WINDOW) -> None:
        self._send(Settings([(0, SETTINGS_INITIAL_WINDOW_SIZE, initial_window)]))

    def _reserve(self, stream: SpdyStream, want: int) -> int:
        with self._cond:
            while True:
                if self.closed.is_set() or stream.reset or stream.local_closed:
                    raise StreamError(f"stream {stream.stream_id} is closed")
                if not (self._flow_control and self._honour_windows):
                    n = want
                    break
                n = min(want, stream.send_window, self._session_window)
                if n > 0:
                    break
                self._cond.wait()
            stream.send_window -= n
            self._session_window -= n
            return n

    def _finish(self, stream: SpdyStream) -> None:
        with self._cond:
            if stream.local_closed or stream.reset or self.closed.is_set():
                return
            stream.local_closed = True
        try:
            self._send(DataFrame(stream.stream_id, b"", FLAG_FIN))
        except StreamError:
            pass
        self._forget_if_done(stream)

    def _reset(self, stream: SpdyStream, status: int) -> None:
        with self._cond:
            if stream.reset:
                return
            stream.reset = True
            stream.local_closed = True
            self._streams.pop(stream.stream_id, None)
            self._cond.notify_all()
        stream.inbound.abort()
        try:
            self._send(RstStream(stream.stream_id, status))
        except StreamError:
            pass

    def _ack(self, stream_id: int, delta: int) -> None:
        try:
            self._send(WindowUpdate(stream_id, delta))
        except StreamError:
            pass

    def _ack_session(self, n: int) -> None:
        """Session-level credit (SPDY/3.1), independent of any one stream's."""
        with self._cond:
            self._session_unacked += n
            if self._session_unacked < DEFAULT_WINDOW // 2:
                return
            delta, self._session_unacked = self._session_unacked, 0
        self._ack(0, delta)

    def _forget_if_done(self, stream: SpdyStream) -> None:
        with self._cond:
            if stream.local_closed and stream.inbound.closed:
                self._streams.pop(stream.stream_id, None)

    # -- reading

    def _run(self) -> None:
        try:
            while True:
                head = _read_exact(self._reader, 8)
                (length,) = struct.unpack(">I", head[4:])
                payload = _read_exact(self._reader, length & 0xFFFFFF)
                self._handle(self._framer.decode(head, payload))
        except (EOFError, OSError, ValueError) as exc:
            log.debug("spdy session %s ended: %r", self._name, exc)
        except ProtocolError as exc:
            log.warning("spdy protocol error, closing", extra={"error": str(exc)})
            try:
                self._send(GoAway(self._last_remote_id, 1))
            except StreamError:
                pass
        finally:
            self._on_transport_gone()

    def _on_transport_gone(self) -> None:
        with self._cond:
            self.closed.set()
            streams = list(self._streams.values())
            self._streams.clear()
            callbacks, self._close_callbacks = self._close_callbacks, []
            self._cond.notify_all()
        for stream in streams:
            stream.inbound.close()  # what already arrived can still be read
            stream.replied.set()
        self._incoming.put(None)
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("close callback failed")

    def _handle(self, frame: Frame) -> None:
        if isinstance(frame, DataFrame):
            stream = self._streams.get(frame.stream_id)
            if stream is None:
                self._ack_session(len(frame.data))  # dropped, but it used session credit
                return
            stream.inbound.feed(frame.data)
            if frame.flags & FLAG_FIN:
                stream.inbound.close()
                self._forget_if_done(stream)
        elif isinstance(frame, SynStream):
            self._on_syn_stream(frame)
        elif isinstance(frame, SynReply):
            stream = self._streams.get(frame.stream_id)
            if stream is not None:
                stream.replied.set()
                if frame.flags & FLAG_FIN:
                    stream.inbound.close()
        elif isinstance(frame, RstStream):
            with self._cond:
                stream = self._streams.pop(frame.stream_id, None)
                if stream is not None:
                    stream.reset = True
                    self._cond.notify_all()
            if stream is not None:
                stream.inbound.abort()
                stream.replied.set()
        elif isinstance(frame, Settings):
            with self._cond:
                self._flow_control = True
                for _flags, ident, value in frame.entries:
                    if ident == SETTINGS_INITIAL_WINDOW_SIZE:
                        delta = value - self._initial_window
                        self._initial_window = value
                        for stream in self._streams.values():
                            stream.send_window += delta
                self._cond.notify_all()
        elif isinstance(frame, WindowUpdate):
            with self._cond:
                self._flow_control = True
                if frame.stream_id == 0:
                    self._session_window += frame.delta
                else:
                    stream = self._streams.get(frame.stream_id)
                    if stream is not None:
                        stream.send_window += frame.delta
                self._cond.notify_all()
        elif isinstance(frame, Ping):
            ours = 1 if self._client else 0
            if frame.ping_id & 1 != ours:
                try:
                    self._send(frame)
                except StreamError:
                    pass
        elif isinstance(frame, GoAway):
            self.peer_went_away.set()
        # HEADERS and unknown control frames carry nothing the protocols use.

    def _on_syn_stream(self, frame: SynStream) -> None:
        remote_parity = 0 if self._client else 1
        sid = frame.stream_id
        if sid == 0 or sid % 2 != remote_parity or sid <= self._last_remote_id:
            try:
                self._send(RstStream(sid, PROTOCOL_ERROR))
            except StreamError:
                pass
            return
        self._last_remote_id = sid
        with self._cond:
            stream = SpdyStream(self, sid, frame.headers, send_window=self._initial_window)
            self._streams[sid] = stream
        if frame.flags & FLAG_UNIDIRECTIONAL:
            stream.local_closed = True
        if frame.flags & FLAG_FIN:
            stream.inbound.close()
        try:
            self._send(SynReply(sid, {}))
        except StreamError:
            return
        stream.replied.set()
        self._incoming.put(stream)
