"""The SPDY/3.1 session the Kubernetes streaming protocols run over.

client-go and crictl multiplex remote-command and port-forward streams over a
SPDY/3.1 connection obtained by an HTTP `Upgrade: SPDY/3.1`. This module has
`SpdySession`, which runs one reader thread per connection and gives out
`SpdyStream`s to read and write, in both roles (the server's and, for
skiffctl and tests, the client's); the frame codec and header compression
are spdy_frames.py.

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
from collections.abc import Callable
from dataclasses import dataclass, field

from machinery.streaming.buffer import InboundBuffer
from machinery.streaming.spdy_frames import (
    FLAG_FIN,
    FLAG_UNIDIRECTIONAL,
    SETTINGS_INITIAL_WINDOW_SIZE,
    DataFrame,
    Frame,
    Framer,
    GoAway,
    Headers,
    Ping,
    ProtocolError,
    RstStream,
    Settings,
    SynReply,
    SynStream,
    WindowUpdate,
)
from machinery.streaming.transport import Reader, StreamError, read_exact

log = logging.getLogger("skiff.streaming.spdy")

# RST_STREAM status codes
PROTOCOL_ERROR = 1
INVALID_STREAM = 2
REFUSED_STREAM = 3
CANCEL = 5
INTERNAL_ERROR = 6
FLOW_CONTROL_ERROR = 7

DEFAULT_WINDOW = 65536
MAX_DATA_CHUNK = 32768
MAX_BUFFERED = 4 << 20  # unread bytes per stream before the reader thread waits


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
                head = read_exact(self._reader, 8)
                (length,) = struct.unpack(">I", head[4:])
                payload = read_exact(self._reader, length & 0xFFFFFF)
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
