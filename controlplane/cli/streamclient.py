"""skiffctl's client of the Kubernetes streaming protocols, as client-go speaks them.

`upgrade` sends one HTTP/1.1 request with `Upgrade: SPDY/3.1` (and the
bearer token) to the API server's pods/exec, pods/attach or pods/portforward
(on the connection `connect` opens, TLS in skiffctl) and returns the upgraded connection as a
client `SpdySession` (machinery/streaming/spdy.py), or raises `UpgradeRefused`
with the agent's or the runtime's answer. On it:

- `run_remote_command` opens the remote-command streams (error, stdin,
  stdout, stderr, resize; v4, v3 or v2 of `channel.k8s.io`), copies the
  local input and terminal sizes in and the output out, and returns the
  command's `Outcome` read from the error stream (a v4 metav1.Status).
- `PortForwarder` opens one (error, data) stream pair per local connection
  (`portforward.k8s.io`, with a `requestID` per pair) and copies bytes both
  ways, half-closes included.

This module knows nothing about pods (the verbs find them and build the path) and never touches the terminal's mode.
"""

from __future__ import annotations

import itertools
import queue
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO
from urllib.parse import quote

from machinery.streaming import portforward as pf
from machinery.streaming import remotecommand as rc
from machinery.streaming.pump import socket_to_stream, stream_to_socket
from machinery.streaming.spdy import SpdySession, SpdyStream
from machinery.streaming.spdy_frames import Headers
from machinery.streaming.status import Outcome, outcome
from machinery.streaming.transport import StreamError

CONNECT_TIMEOUT = 30.0


class UpgradeRefused(Exception):
    """The endpoint answered the upgrade with something other than 101."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(body or f"HTTP {status}")
        self.status = status
        self.body = body


@dataclass
class Upgraded:
    session: SpdySession
    protocol: str
    sock: socket.socket
    rfile: BinaryIO

    def close(self) -> None:
        self.session.close()
        self.rfile.close()


def upgrade(
    address: str,
    path: str,
    token: str,
    protocols: tuple[str, ...],
    connect: Callable[[], socket.socket] | None = None,
) -> Upgraded:
    """POST `path` to `address` (host:port) asking for SPDY/3.1 with
    `protocols`, on the connection `connect` opens (default: plain TCP)."""
    if connect is None:
        host, _, port = address.rpartition(":")
        sock = socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT)
    else:
        sock = connect()
    try:
        lines = [
            f"POST {path} HTTP/1.1",
            f"Host: {address}",
            "Content-Length: 0",
            "Connection: Upgrade",
            "Upgrade: SPDY/3.1",
            "User-Agent: skiffctl",
        ]
        lines += [f"{rc.HEADER_PROTOCOL_VERSION}: {p}" for p in protocols]
        if token:
            lines.append(f"Authorization: Bearer {token}")
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        rfile = sock.makefile("rb")
        status_line = rfile.readline().decode("latin-1")
        words = status_line.split()
        if len(words) < 2 or not words[1].isdigit():
            raise UpgradeRefused(0, f"bad answer from {address}: {status_line.strip()!r}")
        status = int(words[1])
        headers: dict[str, str] = {}
        while True:
            line = rfile.readline().decode("latin-1")
            if line in ("\r\n", "\n", ""):
                break
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if status != 101:
            n = int(headers.get("content-length", "0") or 0)
            body = rfile.read(n) if n else b""
            rfile.close()
            raise UpgradeRefused(status, body.decode(errors="replace").strip())
        sock.settimeout(None)
        session = SpdySession(rfile, sock, client=True, name="skiffctl-spdy")
        session.start()
        session.send_settings()
        protocol = headers.get(rc.HEADER_PROTOCOL_VERSION.lower(), "")
        return Upgraded(session, protocol, sock, rfile)
    except BaseException:
        sock.close()
        raise


def command_path(
    kind: str,
    namespace: str,
    pod: str,
    container: str,
    command: list[str],
    *,
    stdin: bool,
    stdout: bool,
    stderr: bool,
    tty: bool,
) -> str:
    """The API path of an exec or attach request (pods/exec, pods/attach)."""
    query = [("command", c) for c in command] + [("container", container)]
    query += [
        (name, "true")
        for name, on in (("stdin", stdin), ("stdout", stdout), ("stderr", stderr), ("tty", tty))
        if on
    ]
    qs = "&".join(f"{k}={quote(v, safe='')}" for k, v in query)
    return f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(pod)}/{kind}?{qs}"


def port_forward_path(namespace: str, pod: str, ports: list[int]) -> str:
    qs = "&".join(f"port={p}" for p in ports)
    path = f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(pod)}/portforward"
    return path + (f"?{qs}" if qs else "")


# ---------------------------------------------------------------- remote command


@dataclass
class CommandIO:
    """The local ends of a remote command.

    `read_stdin` returns b"" at EOF; it may block forever (a terminal), so it
    runs in a daemon thread that is never joined. `sizes` carries terminal
    sizes (width, height); the first is sent right after the streams open."""

    read_stdin: Callable[[], bytes] | None
    write_stdout: Callable[[bytes], None] | None
    write_stderr: Callable[[bytes], None] | None
    sizes: queue.Queue[tuple[int, int] | None] = field(default_factory=queue.Queue)


def _drain(stream: SpdyStream | None, sink: Callable[[bytes], None] | None) -> None:
    if stream is None:
        return
    while True:
        data = stream.read()
        if not data:
            return
        if sink is not None:
            try:
                sink(data)
            except OSError:
                stream.cancel()
                return


def _pump_stdin(read: Callable[[], bytes], stream: SpdyStream) -> None:
    try:
        while True:
            data = read()
            if not data:
                break
            stream.write(data)
    except (OSError, ValueError):
        pass
    finally:
        stream.close()


def _pump_sizes(sizes: queue.Queue[tuple[int, int] | None], stream: SpdyStream) -> None:
    while (size := sizes.get()) is not None:
        try:
            stream.write(rc.encode_size(*size))
        except StreamError:
            return


def run_remote_command(conn: Upgraded, io: CommandIO, *, tty: bool) -> Outcome:
    """Open the streams client-go opens, copy until the server is done, return how it ended."""
    session = conn.session

    def open_stream(kind: str) -> SpdyStream:
        headers: Headers = {rc.HEADER_STREAM_TYPE.lower(): [kind]}
        return session.open_stream(headers)

    error = open_stream(rc.STREAM_ERROR)
    stdin = open_stream(rc.STREAM_STDIN) if io.read_stdin is not None else None
    stdout = open_stream(rc.STREAM_STDOUT) if io.write_stdout is not None else None
    stderr = open_stream(rc.STREAM_STDERR) if io.write_stderr is not None and not tty else None
    resize = open_stream(rc.STREAM_RESIZE) if tty and conn.protocol != rc.V2 else None

    errors = bytearray()
    readers = [
        threading.Thread(target=_drain, args=(error, errors.extend), daemon=True),
        threading.Thread(target=_drain, args=(stdout, io.write_stdout), daemon=True),
        threading.Thread(target=_drain, args=(stderr, io.write_stderr), daemon=True),
    ]
    for thread in readers:
        thread.start()
    if resize is not None:
        threading.Thread(
            target=_pump_sizes, args=(io.sizes, resize), daemon=True, name="skiffctl-resize"
        ).start()
    if stdin is not None and io.read_stdin is not None:
        threading.Thread(
            target=_pump_stdin, args=(io.read_stdin, stdin), daemon=True, name="skiffctl-stdin"
        ).start()
    for thread in readers:
        thread.join()
    io.sizes.put(None)
    lost = session.closed.is_set() and not errors
    conn.close()
    if conn.protocol == rc.V4 and not errors:
        return Outcome(None, "lost connection to the container" if lost else "no status")
    return outcome(bytes(errors), status_json=conn.protocol == rc.V4)


# ---------------------------------------------------------------- port-forward


class PortForwarder:
    """Local connections -> stream pairs on one port-forward session."""

    def __init__(self, conn: Upgraded, on_error: Callable[[int, str], None]) -> None:
        self.conn = conn
        self._ids = itertools.count()
        self._on_error = on_error
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._socks: set[socket.socket] = set()

    def handle(self, local: socket.socket, port: int) -> None:
        """Serve one accepted connection in a thread of its own."""
        thread = threading.Thread(
            target=self._forward, args=(local, port), daemon=True, name="skiffctl-forward"
        )
        with self._lock:
            self._threads.append(thread)
            self._socks.add(local)
        thread.start()

    def close(self) -> None:
        """End every forwarded connection and the session; wait for the threads."""
        with self._lock:
            socks = list(self._socks)
            threads = list(self._threads)
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.conn.session.abort_streams()
        self.conn.close()
        for thread in threads:
            thread.join()

    def _forward(self, local: socket.socket, port: int) -> None:
        try:
            self._copy(local, port)
        finally:
            with self._lock:
                self._socks.discard(local)
            local.close()

    def _copy(self, local: socket.socket, port: int) -> None:
        rid = str(next(self._ids))
        headers: Headers = {
            pf.HEADER_PORT.lower(): [str(port)],
            pf.HEADER_REQUEST_ID.lower(): [rid],
        }
        try:
            error = self.conn.session.open_stream(
                {**headers, pf.HEADER_STREAM_TYPE.lower(): [pf.STREAM_ERROR]}
            )
            error.close()  # never written by the client, as client-go
            data = self.conn.session.open_stream(
                {**headers, pf.HEADER_STREAM_TYPE.lower(): [pf.STREAM_DATA]}
            )
        except StreamError as exc:
            self._on_error(port, str(exc))
            return
        message = bytearray()
        error_reader = threading.Thread(
            target=_drain, args=(error, message.extend), daemon=True, name="skiffctl-forward-err"
        )
        error_reader.start()

        def local_to_remote() -> None:
            socket_to_stream(local, data)
            data.close()

        upstream = threading.Thread(target=local_to_remote, daemon=True, name="skiffctl-fwd-in")
        upstream.start()
        try:
            stream_to_socket(data, local)
        except OSError:
            data.cancel()
        try:
            local.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        upstream.join()
        error_reader.join()
        if message:
            self._on_error(port, message.decode(errors="replace"))
