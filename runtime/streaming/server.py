"""The streaming HTTP server: single-use URLs in, upgraded streaming sessions out.

`StreamingServer` binds 127.0.0.1 (by default) on a configurable port (0 for
an ephemeral one) and serves, each in its own thread:

    GET|POST /exec/<token>         remote command, SPDY/3.1 or WebSocket
    GET|POST /attach/<token>       remote command, SPDY/3.1 or WebSocket
    GET|POST /portforward/<token>  port-forward, SPDY/3.1 or WebSocket

`get_exec`, `get_attach` and `get_port_forward` validate a CRI request, store
it under a fresh token (single use, one-minute TTL) and return the absolute
URL. An unknown, used or expired token answers 404; a request that is neither
a SPDY nor a WebSocket upgrade, or offers no protocol version we speak,
answers 400/403 as kubelet does.

The server never forks and never enters a namespace: the backend does that
outside the server's threads. `stop()` closes the listener, shuts down live
connections and joins every thread it started.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from machinery.streaming import websocket
from machinery.streaming.spdy import SpdySession
from machinery.streaming.upgrade import UpgradeHandler, UpgradeServer, header_values
from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.streaming import portforward, remotecommand, ws_portforward
from runtime.streaming.backend import Session, Stdio, StreamingBackend, TermSize
from runtime.streaming.cache import RequestCache, StreamRequest

log = logging.getLogger("skiff.runtime.streaming")


@dataclass(frozen=True)
class StreamingConfig:
    address: str = "127.0.0.1"
    port: int = 0
    token_ttl: float = 60.0
    max_in_flight: int = 1000
    stream_creation_timeout: float = 30.0  # for the client to open its SPDY streams
    drain_timeout: float = 2.0  # output still flowing after the process exited
    initial_size_timeout: float = 0.5  # tty: wait this long for the client's first size
    linger: float = 5.0  # for the client to close after we finished
    request_timeout: float = 30.0  # to send the HTTP request line and headers
    idle_timeout: float | None = (
        4 * 3600.0
    )  # no traffic either way: end the session (kubelet's default)


class StreamingServer:
    def __init__(
        self,
        backend: StreamingBackend,
        config: StreamingConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backend = backend
        self.config = config or StreamingConfig()
        self.cache = RequestCache(self.config.token_ttl, self.config.max_in_flight, clock)
        self._http = UpgradeServer(
            _Handler, self, request_timeout=self.config.request_timeout, name="streaming server"
        )

    # -- lifecycle

    def start(self) -> None:
        self._http.start(self.config.address, self.config.port)
        log.info("streaming server listening", extra={"url": self.base_url})

    def stop(self) -> None:
        self._http.stop()

    def __enter__(self) -> StreamingServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._http.port

    @property
    def base_url(self) -> str:
        host = self.config.address
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    # -- URLs for the CRI RPCs

    def get_exec(self, req: api_pb2.ExecRequest) -> str:
        if not req.container_id:
            raise errors.InvalidArgument("missing required container_id")
        if not req.cmd:
            raise errors.InvalidArgument("missing required cmd")
        _validate_stdio(req.tty, req.stdin, req.stdout, req.stderr)
        return f"{self.base_url}/exec/{self.cache.insert(req)}"

    def get_attach(self, req: api_pb2.AttachRequest) -> str:
        if not req.container_id:
            raise errors.InvalidArgument("missing required container_id")
        _validate_stdio(req.tty, req.stdin, req.stdout, req.stderr)
        return f"{self.base_url}/attach/{self.cache.insert(req)}"

    def get_port_forward(self, req: api_pb2.PortForwardRequest) -> str:
        if not req.pod_sandbox_id:
            raise errors.InvalidArgument("missing required pod_sandbox_id")
        return f"{self.base_url}/portforward/{self.cache.insert(req)}"


def _validate_stdio(tty: bool, stdin: bool, stdout: bool, stderr: bool) -> None:
    if tty and stderr:
        raise errors.InvalidArgument("tty and stderr cannot both be true")
    if not (stdin or stdout or stderr):
        raise errors.InvalidArgument("one of stdin, stdout, or stderr must be set")


def _abort_all(streams: Any) -> None:
    for stream in streams:
        stream.inbound.abort()


_KINDS: dict[str, type[Any]] = {
    "exec": api_pb2.ExecRequest,
    "attach": api_pb2.AttachRequest,
    "portforward": api_pb2.PortForwardRequest,
}


class _Handler(UpgradeHandler):
    server_version = "skiff-streaming"

    @property
    def owner(self) -> StreamingServer:
        owner: StreamingServer = self.server.owner
        return owner

    def _switch(self, headers: list[tuple[str, str]]) -> None:
        self.switch_protocols(headers, self.owner.config.idle_timeout)

    # -- routing

    def dispatch(self) -> None:
        path = self.path.split("?", 1)[0]
        parts = [p for p in path.split("/") if p]
        if len(parts) != 2 or parts[0] not in _KINDS:
            self.plain(404, "404 page not found")
            return
        kind, token = parts
        request = self.owner.cache.consume(token)
        if request is None or not isinstance(request, _KINDS[kind]):
            self.plain(404, "404 page not found")
            return
        upgrade = self.headers.get("Upgrade", "").lower()
        if upgrade == "websocket":
            if kind == "portforward":
                self._websocket_port_forward(request)
                return
            self._websocket_remote_command(request)
        elif upgrade.startswith("spdy/3.1"):
            self._spdy(kind, request)
        else:
            self.plain(400, "unable to upgrade: missing upgrade headers in request")

    # -- SPDY

    def _spdy(self, kind: str, request: StreamRequest) -> None:
        offered = header_values(self.headers.get_all("X-Stream-Protocol-Version") or [])
        supported = (
            (portforward.PROTOCOL,) if kind == "portforward" else remotecommand.SPDY_PROTOCOLS
        )
        if not offered:
            self.plain(400, "unable to upgrade: X-Stream-Protocol-Version is required")
            return
        chosen = next((p for p in offered if p in supported), None)
        if chosen is None:
            self.plain(
                403,
                f"unable to upgrade: unable to negotiate protocol: client supports {offered}, "
                f"server accepts {list(supported)}",
                {"X-Accepted-Stream-Protocol-Versions": list(supported)},
            )
            return
        self._switch(
            [
                ("Connection", "Upgrade"),
                ("Upgrade", "SPDY/3.1"),
                ("X-Stream-Protocol-Version", chosen),
            ]
        )
        owner = self.owner
        session = SpdySession(self.rfile, self.connection, client=False, name=f"spdy-{kind}")
        self.on_stop(session.abort_streams)
        session.start()
        try:
            if isinstance(request, api_pb2.PortForwardRequest):
                sandbox = request.pod_sandbox_id
                portforward.serve(
                    session,
                    lambda port: owner.backend.port_forward(sandbox, port),
                    sandbox,
                    pair_timeout=owner.config.stream_creation_timeout,
                )
            else:
                self._spdy_remote_command(session, chosen, request)
        finally:
            session.shutdown(owner.config.linger)

    def _spdy_remote_command(
        self,
        session: SpdySession,
        protocol: str,
        request: api_pb2.ExecRequest | api_pb2.AttachRequest,
    ) -> None:
        owner = self.owner
        opts = remotecommand.Options(request.stdin, request.stdout, request.stderr, request.tty)
        expected = opts.expected_streams(protocol)
        streams: dict[str, Any] = {}
        deadline = time.monotonic() + owner.config.stream_creation_timeout
        while set(streams) != expected:
            stream = session.accept_stream(timeout=max(0.0, deadline - time.monotonic()))
            if stream is None:
                log.info(
                    "client did not create its streams",
                    extra={"container_id": request.container_id, "have": sorted(streams)},
                )
                return
            kind = stream.header("streamType")
            if kind not in expected or kind in streams:
                stream.cancel()
                continue
            streams[kind] = stream
        # Output streams are ours to write only; the client's side of them ends now or later.
        ch = remotecommand.Channels(
            stdin=streams.get(remotecommand.STREAM_STDIN),
            stdout=streams.get(remotecommand.STREAM_STDOUT),
            stderr=streams.get(remotecommand.STREAM_STDERR),
            resize=streams.get(remotecommand.STREAM_RESIZE),
            error=streams.get(remotecommand.STREAM_ERROR),
            status_json=protocol == remotecommand.V4,
            abort_inputs=lambda: _abort_all(streams.values()),
        )
        session.on_close(ch.mark_gone)
        self._run_remote_command(request, ch)

    # -- WebSocket

    def _websocket_handshake(self, chosen: str | None, supported: list[str]) -> bool:
        """Answer 101 with `chosen` ("": no Sec-WebSocket-Protocol), or refuse."""
        key = self.headers.get("Sec-WebSocket-Key", "")
        if not key or self.headers.get("Sec-WebSocket-Version", "").strip() != "13":
            self.plain(400, "bad WebSocket handshake")
            return False
        if chosen is None:
            offered = header_values(self.headers.get_all("Sec-WebSocket-Protocol") or [])
            self.plain(
                403, f"unable to upgrade: client supports {offered}, server accepts {supported}"
            )
            return False
        headers = [
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade"),
            ("Sec-WebSocket-Accept", websocket.accept_key(key)),
        ]
        if chosen:
            headers.append(("Sec-WebSocket-Protocol", chosen))
        self._switch(headers)
        return True

    def _websocket_close(self, ws: websocket.WebSocket, conn: websocket.ChannelConnection) -> None:
        """End the session as Kubernetes does, without waiting for the client:
        the close frame after everything written (the status came with it),
        then the end of the stream at once (wsstream's Conn.Close, over
        golang.org/x/net/websocket's Conn.Close: WriteClose, then the
        connection closed). SHUT_WR sends FIN behind the queued bytes; the
        socket stays open for reading, its input discarded, until the client
        answers or `linger` passes, so closing it drops nothing still in flight."""
        ws.send_close()
        try:
            self.connection.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        conn.gone.wait(self.owner.config.linger)
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        conn.join()

    def _websocket_port_forward(self, request: StreamRequest) -> None:
        assert isinstance(request, api_pb2.PortForwardRequest)
        ports = list(request.port)
        if not ports:
            self.plain(400, 'query parameter "port" is required')
            return
        if any(not 0 < p < 65536 for p in ports):
            self.plain(400, f"ports must be between 1 and 65535: {ports}")
            return
        offered = header_values(self.headers.get_all("Sec-WebSocket-Protocol") or [])
        chosen = ws_portforward.choose_protocol(offered)
        if not self._websocket_handshake(chosen, [ws_portforward.V4]):
            return
        ws = websocket.WebSocket(self.rfile, self.connection, client=False)
        conn = websocket.ChannelConnection(ws, tuple(2 * i for i in range(len(ports))), v5=False)
        self.on_stop(conn.abort_inputs)
        conn.start()
        owner, sandbox = self.owner, request.pod_sandbox_id
        try:
            for i, port in enumerate(ports):
                conn.write(2 * i, ws_portforward.port_message(port))
                conn.write(2 * i + 1, ws_portforward.port_message(port))
            ws_portforward.serve(
                conn, ports, lambda port: owner.backend.port_forward(sandbox, port), sandbox
            )
        except OSError:
            pass  # the client went away before the ports were written
        finally:
            self._websocket_close(ws, conn)

    def _websocket_remote_command(self, request: StreamRequest) -> None:
        assert isinstance(request, api_pb2.ExecRequest | api_pb2.AttachRequest)
        offered = header_values(self.headers.get_all("Sec-WebSocket-Protocol") or [])
        chosen = next((p for p in remotecommand.WEBSOCKET_PROTOCOLS if p in offered), None)
        if not self._websocket_handshake(chosen, list(remotecommand.WEBSOCKET_PROTOCOLS)):
            return
        ws = websocket.WebSocket(self.rfile, self.connection, client=False)
        inputs = (websocket.STDIN, websocket.RESIZE)
        conn = websocket.ChannelConnection(ws, inputs, v5=chosen == remotecommand.V5)
        self.on_stop(conn.abort_inputs)
        conn.start()
        tty = request.tty

        ch = remotecommand.Channels(
            stdin=conn.inputs[websocket.STDIN] if request.stdin else None,
            stdout=websocket.ChannelSink(conn, websocket.STDOUT) if request.stdout else None,
            stderr=websocket.ChannelSink(conn, websocket.STDERR)
            if request.stderr and not tty
            else None,
            resize=conn.inputs[websocket.RESIZE] if tty else None,
            error=websocket.ChannelSink(conn, websocket.ERROR, last=True),
            status_json=True,
            abort_inputs=conn.abort_inputs,
        )
        conn.on_gone(ch.mark_gone)
        try:
            self._run_remote_command(request, ch)
        finally:
            self._websocket_close(ws, conn)

    # -- shared

    def _run_remote_command(
        self, request: api_pb2.ExecRequest | api_pb2.AttachRequest, ch: remotecommand.Channels
    ) -> None:
        owner = self.owner
        backend = owner.backend
        cid = request.container_id
        if isinstance(request, api_pb2.ExecRequest):
            cmd = list(request.cmd)

            def start(stdio: Stdio, size: TermSize | None) -> Session:
                return backend.exec(cid, cmd, request.tty, stdio, size)

        else:

            def start(stdio: Stdio, size: TermSize | None) -> Session:
                return backend.attach(cid, request.tty, stdio, size)

        remotecommand.serve(
            start,
            ch,
            tty=request.tty,
            drain_timeout=owner.config.drain_timeout,
            initial_size_timeout=owner.config.initial_size_timeout,
            container_id=cid,
        )
