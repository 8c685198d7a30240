"""The agent's streaming endpoint: exec, attach and port-forward, relayed to the runtime.

As kubelet does, the agent serves

    POST /exec/<namespace>/<pod>/<container>?command=..&command=..&stdin=1&stdout=1&stderr=1&tty=1
    POST /attach/<namespace>/<pod>/<container>?stdin=1&stdout=1&stderr=1&tty=1
    POST /portforward/<namespace>/<pod>?port=80&port=443

(GET too, for WebSocket clients) over TLS only. The serving certificate was
issued by the cluster CA at join (agent/serving_tls.py). The API server
presents its client certificate (CN `system:apiserver`, chained to the same
CA) and is served everything. Any other caller presents no certificate and
a bearer token, which agent/webhook_auth.py checks as the kubelet's webhook
authn/authz does (TokenReview, then SubjectAccessReview on nodes/proxy,
nodes/stats, ...); such callers also get `GET /stats/summary` (the
kubelet's Summary API) and the metrics pages (`/metrics`, `/metrics/cadvisor`,
`/metrics/resource`, `/metrics/probes`: agent/metrics.py) but never the relayed gRPC service. The TLS
handshake, with a deadline, and those checks come before any other work;
plain text, certificates of anyone but the API server and callers without
a valid, authorized token are refused. It finds the running container (labels io.kubernetes.pod.uid and
io.kubernetes.container.name) or the ready sandbox of the pod through CRI,
asks the runtime for a streaming URL (CRI Exec, Attach, PortForward), dials
that URL, forwards the client's upgrade request with the path rewritten to
the URL's and the same upgrade headers, and then copies bytes both ways
until both sides have closed. The agent never parses SPDY or WebSocket:
whatever the runtime answers (101 and the session, or an error) goes back
to the client as it is.

The endpoint shares one port with the agent's gRPC server: a connection
that negotiated ALPN `h2` (or, without TLS in unit tests, opens with the
HTTP/2 preface) is relayed byte for byte to `grpc_upstream`, a unix socket
in the agent's root directory, so the API server reaches logs, stats and
streams at the one address a Node advertises; `serve_endpoint` starts both
that way. This module
never runs anything on the node itself and never holds a connection after
`stop()`.
"""

from __future__ import annotations

import json
import logging
import os
import select
import socket
import socketserver
import ssl
import struct
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import grpc

from agent.cri_client import CRIClient
from agent.request_target import BadTarget, RequestTarget
from agent.request_target import parse as parse_request_target
from agent.server import AgentServicer, serve
from agent.stats_summary import summary
from agent.stream_targets import (
    CRIStreams,
    PodLookup,
    RequestError,
    StreamRuntime,
    parse_target,
    runtime_url,
)
from agent.webhook_auth import WebhookAuth
from machinery.streaming.upgrade import StrictRequestHandler
from proto.agent.v1.agent_pb2 import StatsRequest

log = logging.getLogger("skiff.agent.streams")

HTTP2_PREFACE = b"PRI * HTTP/2.0"
_CHUNK = 65536
# Headers of the client's request that are the agent's business, not the runtime's.
_DROPPED = {"host", "authorization", "content-length", "transfer-encoding", "proxy-authorization"}


# The API server's client certificate (controlplane.apiserver.tls.AGENT_CLIENT_CN).
API_SERVER_CN = "system:apiserver"
SUMMARY_PATH = "/stats/summary"
Page = Callable[[], tuple[str, bytes]]  # a GET's answer: (content type, body)


def _shutdown(sock: socket.socket, how: int) -> None:
    try:
        sock.shutdown(how)
    except OSError:
        pass


class Buffered(Protocol):
    def read1(self, n: int = ..., /) -> bytes: ...


def relay(client: socket.socket, client_reader: Buffered | None, upstream: socket.socket) -> None:
    """Copy bytes both ways until both directions ended; half-closes pass through.

    `client_reader`, if given, is a buffered reader over `client` that may
    already hold bytes the client sent; they are read from it first."""

    def client_to_upstream() -> None:
        try:
            while True:
                if client_reader is not None:
                    data = client_reader.read1(_CHUNK)
                else:
                    data = client.recv(_CHUNK)
                if not data:
                    break
                upstream.sendall(data)
            _shutdown(upstream, socket.SHUT_WR)
        except (OSError, ValueError):
            _shutdown(upstream, socket.SHUT_RDWR)
            _shutdown(client, socket.SHUT_RDWR)

    thread = threading.Thread(target=client_to_upstream, name="stream-relay-in", daemon=True)
    thread.start()
    try:
        while True:
            data = upstream.recv(_CHUNK)
            if not data:
                break
            client.sendall(data)
        _shutdown(client, socket.SHUT_WR)
    except OSError:
        _shutdown(upstream, socket.SHUT_RDWR)
        _shutdown(client, socket.SHUT_RDWR)
    thread.join()


def pump(client: socket.socket, upstream: socket.socket, idle: float | None) -> None:
    """relay for a TLS client, in one thread (an SSL connection must not be
    read and written from two threads at once): copy bytes both ways until
    the upstream closes, an error, or `idle` seconds without traffic. The
    client's half-close passes through to the upstream."""
    client.settimeout(idle)
    upstream.settimeout(idle)
    reading_client = True
    try:
        while True:
            if isinstance(client, ssl.SSLSocket) and client.pending():
                ready: list[socket.socket] = [client]
            else:
                watch = [upstream, client] if reading_client else [upstream]
                ready = select.select(watch, [], [], idle)[0]
                if not ready:
                    return
            for sock in ready:
                if sock is upstream:
                    data = upstream.recv(_CHUNK)
                    if not data:
                        return
                    client.sendall(data)
                else:
                    data = client.recv(_CHUNK)
                    if data:
                        upstream.sendall(data)
                    else:
                        reading_client = False
                        _shutdown(upstream, socket.SHUT_WR)
    except (OSError, ValueError):
        return


# ---------------------------------------------------------------- the server


@dataclass(frozen=True)
class StreamProxyConfig:
    listen: str = "127.0.0.1:0"  # host:port; "0.0.0.0:10250" to share the agent's port
    request_timeout: float = 30.0  # for the request line and headers, and for dialing
    handshake_timeout: float = 10.0  # the TLS handshake, before anything else
    idle_timeout: float | None = 4 * 3600.0  # no traffic either way ends a relay
    # Connections served at once; more are closed on accept, before a thread
    # or a byte of work is spent on them.
    max_connections: int = 256


def _split_listen(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    return host.strip("[]") or "0.0.0.0", int(port)


class _TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = True

    def __init__(self, addr: tuple[str, int], owner: StreamProxy) -> None:
        self.owner = owner
        if ":" in addr[0]:
            self.address_family = socket.AF_INET6
        super().__init__(addr, _Handler)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        """Refuse a connection past max_connections (socketserver then closes it)."""
        owner = self.owner
        with owner._lock:
            if owner._handlers >= owner.config.max_connections:
                log.warning("agent endpoint: %d connections open, refusing one more",
                            owner._handlers)  # fmt: skip
                return False
            owner._handlers += 1  # reserved here, released by the handler's finish()
        return True

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("agent endpoint: connection from %s failed", client_address, exc_info=True)


class StreamProxy:
    """The HTTP endpoint; start() binds, stop() closes every connection it holds."""

    def __init__(
        self,
        pods: PodLookup,
        runtime: StreamRuntime,
        tls: ssl.SSLContext | None,
        config: StreamProxyConfig | None = None,
        grpc_upstream: str = "",
        callers: WebhookAuth | None = None,
        stats: Callable[[], dict[str, Any]] | None = None,
        pages: Mapping[str, Page] | None = None,
    ) -> None:
        """`tls` (agent/serving_tls.py) None serves plain text to anyone
        (unit tests only); `grpc_upstream` (host:port or unix:PATH) receives
        the HTTP/2 connections, "" refuses them; `callers` checks the tokens
        of callers without a certificate (None refuses them); `stats` answers
        /stats/summary (None: 404); `pages` answers GETs of other paths
        (/metrics, /metrics/cadvisor...) with (content type, body)."""
        self.pods = pods
        self.runtime = runtime
        self.tls = tls
        self.config = config or StreamProxyConfig()
        self.grpc_upstream = grpc_upstream
        self.callers = callers
        self.pages = dict(pages or {})
        if stats is not None:
            self.pages[SUMMARY_PATH] = lambda: ("application/json",
                                                (json.dumps(stats()) + "\n").encode())  # fmt: skip
        self._tcp: _TCPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Condition()
        self._live: set[socket.socket] = set()
        self._handlers = 0

    def start(self) -> StreamProxy:
        self._tcp = _TCPServer(_split_listen(self.config.listen), self)
        self._thread = threading.Thread(
            target=self._tcp.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="agent-streams",
            daemon=True,
        )
        self._thread.start()
        log.info("agent streaming endpoint on %s (port %d)", self.config.listen, self.port)
        return self

    def stop(self) -> None:
        if self._tcp is None:
            return
        self._tcp.shutdown()
        with self._lock:
            live = list(self._live)
        for sock in live:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
            _shutdown(sock, socket.SHUT_RDWR)
        self._tcp.server_close()
        with self._lock:  # daemon handler threads are not joined by socketserver
            self._lock.wait_for(lambda: self._handlers == 0, timeout=10.0)
        if self._thread is not None:
            self._thread.join()
        self._tcp = None

    def __enter__(self) -> StreamProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._tcp is None:
            raise RuntimeError("stream proxy is not started")
        return int(self._tcp.server_address[1])

    def _track(self, sock: socket.socket, live: bool) -> None:
        with self._lock:
            if live:
                self._live.add(sock)
            else:
                self._live.discard(sock)
            self._lock.notify_all()

    def _handler(self, delta: int) -> None:
        with self._lock:
            self._handlers += delta
            self._lock.notify_all()

    def dial(self, host: str, port: int) -> socket.socket:
        sock = socket.create_connection((host, port), timeout=self.config.request_timeout)
        self._track(sock, True)
        return sock

    def dial_unix(self, path: str) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.config.request_timeout)
        try:
            sock.connect(path)
        except OSError:
            sock.close()
            raise
        self._track(sock, True)
        return sock

    def hang_up(self, sock: socket.socket) -> None:
        self._track(sock, False)
        sock.close()


def _common_name(cert: Mapping[str, Any] | None) -> str:
    for rdn in (cert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return ""


def _accept_tls(
    context: ssl.SSLContext, sock: socket.socket, timeout: float, tokens: bool
) -> tuple[ssl.SSLSocket, bool]:
    """The TLS handshake within `timeout`; then the socket and whether the
    caller is the API server. A certificate of anyone else, or none when
    token callers are not served (`tokens`), raises (the connection is then
    closed)."""
    sock.settimeout(timeout)
    tls = context.wrap_socket(sock, server_side=True)
    cert = tls.getpeercert()
    caller = _common_name(cert)
    if caller == API_SERVER_CN:
        return tls, True
    if not cert and tokens:
        return tls, False  # a bearer token decides, per request
    log.warning("agent endpoint: refused a caller presenting %r", caller)
    tls.close()
    raise PermissionError(f"caller {caller!r} is not {API_SERVER_CN}")


def _peek(sock: socket.socket, n: int) -> bytes:
    """The first `n` bytes the peer sent (fewer if it closed), left unread."""
    try:
        return sock.recv(n, socket.MSG_PEEK | socket.MSG_WAITALL)
    except OSError:
        return b""


class _Handler(StrictRequestHandler):
    """One connection; request heads are read strictly (machinery/streaming/upgrade.py)."""

    server: _TCPServer
    server_version = "skiff-agent"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http: " + format, *args)

    # Whether the caller proved to be the API server (without TLS, in unit
    # tests, everyone is).
    apiserver = True

    def setup(self) -> None:
        owner = self.server.owner
        try:
            if owner.tls is not None:
                self.request, self.apiserver = _accept_tls(
                    owner.tls, self.request, owner.config.handshake_timeout,
                    owner.callers is not None,
                )  # fmt: skip
            super().setup()
            if owner.tls is not None:  # unbuffered: no bytes hidden in a buffer when pump starts
                self.rfile.close()
                self.rfile = self.connection.makefile("rb", 0)
        except BaseException:
            self.server.owner._handler(-1)
            raise
        self.connection.settimeout(self.server.owner.config.request_timeout)
        self.server.owner._track(self.connection, True)

    def finish(self) -> None:
        self.server.owner._track(self.connection, False)
        try:
            super().finish()
        except OSError:
            pass
        finally:
            if isinstance(self.connection, ssl.SSLSocket):
                self.connection.close()  # wrap_socket detached the socket socketserver closes
            self.server.owner._handler(-1)

    def handle(self) -> None:
        conn = self.connection
        if isinstance(conn, ssl.SSLSocket):
            h2 = conn.selected_alpn_protocol() == "h2"
        else:
            h2 = _peek(conn, len(HTTP2_PREFACE)) == HTTP2_PREFACE
        if h2:
            if self.apiserver:  # the gRPC service is the API server's alone
                self._relay_grpc()
            return
        super().handle()

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _relay_grpc(self) -> None:
        owner = self.server.owner
        self.close_connection = True
        if not owner.grpc_upstream:
            return
        try:
            if owner.grpc_upstream.startswith("unix:"):
                upstream = owner.dial_unix(owner.grpc_upstream[5:])
            else:
                host, port = _split_listen(owner.grpc_upstream)
                upstream = owner.dial("127.0.0.1" if host in ("0.0.0.0", "::") else host, port)
        except OSError as exc:
            log.warning("agent gRPC endpoint unreachable: %s", exc)
            return
        try:
            if isinstance(self.connection, ssl.SSLSocket):
                pump(self.connection, upstream, None)
                return
            upstream.settimeout(None)
            self.connection.settimeout(None)
            relay(self.connection, None, upstream)
        finally:
            owner.hang_up(upstream)

    def _authorized(self, target: RequestTarget) -> bool:
        """Whether the request for `target` may go on; answers the refusal when not."""
        if self.apiserver:
            return True
        callers = self.server.owner.callers
        if callers is None:
            self.plain(401, "Unauthorized")
            return False
        decision = callers.check(self.headers.get("Authorization", ""), self.command, target)
        if decision.code != 200:
            log.info("agent endpoint: %d for %s %s", decision.code, self.command, target.path)
            self.plain(decision.code, decision.message)
            return False
        return True

    def _page(self, page: Page) -> None:
        try:
            kind, body = page()
        except Exception as exc:  # the runtime cannot say: the caller hears why
            self.plain(
                503, f"{'metrics' if 'metrics' in self.path else 'stats'} unavailable: {exc}"
            )
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def _dispatch(self) -> None:
        owner = self.server.owner
        self.close_connection = True
        try:  # once: the authorizer and the router read this value, never self.path
            request = parse_request_target(self.path)
        except BadTarget as err:
            log.info("agent endpoint: %d for %r: %s", err.code, self.path[:200], err)
            self.plain(err.code, str(err))
            return
        if not self._authorized(request):
            return
        page = owner.pages.get(request.path) if self.command == "GET" else None
        if page is not None:
            self._page(page)
            return
        try:
            target = parse_target(request)
            url = runtime_url(target, owner.pods, owner.runtime)
        except RequestError as err:
            log.info("stream refused", extra={"path": request.path, "code": err.code})
            self.plain(err.code, str(err))
            return
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            self.plain(500, f"runtime returned a streaming URL the agent cannot dial: {url}")
            return
        try:
            upstream = owner.dial(parts.hostname, parts.port or 80)
        except OSError as exc:
            self.plain(502, f"cannot reach the runtime's streaming server: {exc}")
            return
        log.info(
            "stream",
            extra={"kind": target.kind, "pod": f"{target.namespace}/{target.pod}"},
        )
        try:
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            lines = [f"{self.command} {path} HTTP/1.1", f"Host: {parts.netloc}"]
            for name, value in self.headers.items():
                if name.lower() not in _DROPPED:
                    lines.append(f"{name}: {value}")
            lines.append("Content-Length: 0")
            upstream.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            timeout = owner.config.idle_timeout
            if isinstance(self.connection, ssl.SSLSocket):
                pump(self.connection, upstream, timeout)
                return
            upstream.settimeout(timeout)
            self.connection.settimeout(timeout)
            relay(self.connection, self.rfile, upstream)
        except OSError as exc:
            log.info("stream relay ended: %s", exc)
        finally:
            owner.hang_up(upstream)


def serve_streams(
    pods: PodLookup,
    runtime: CRIClient | StreamRuntime,
    tls: ssl.SSLContext | None,
    listen: str,
    grpc_upstream: str = "",
    callers: WebhookAuth | None = None,
    stats: Callable[[], dict[str, Any]] | None = None,
    pages: Mapping[str, Page] | None = None,
) -> StreamProxy:
    """Start the streaming endpoint on `listen`; see the module docstring."""
    streams: StreamRuntime = CRIStreams(runtime) if isinstance(runtime, CRIClient) else runtime
    config = StreamProxyConfig(listen=listen)
    return StreamProxy(pods, streams, tls, config, grpc_upstream, callers, stats, pages).start()


@dataclass
class AgentEndpoint:
    """The agent's one advertised port: streams served here, gRPC relayed to a unix socket."""

    grpc_server: grpc.Server
    grpc_socket: str
    proxy: StreamProxy

    @property
    def port(self) -> int:
        return self.proxy.port

    def stop(self, grace: float = 1.0) -> None:
        self.proxy.stop()
        self.grpc_server.stop(grace).wait()


def serve_endpoint(
    servicer: AgentServicer,
    listen: str,
    pods: PodLookup,
    runtime: CRIClient | StreamRuntime,
    tls: ssl.SSLContext | None,
    socket_path: str,
    callers: WebhookAuth | None = None,
    pages: Mapping[str, Page] | None = None,
) -> AgentEndpoint:
    """Serve the gRPC `servicer` on the unix socket `socket_path` (0600) and
    the streaming endpoint on `listen`, relaying gRPC connections to the former;
    `callers` checks the bearer tokens of callers other than the API server."""
    try:
        os.unlink(socket_path)
    except FileNotFoundError:
        pass
    grpc_server, _ = serve(servicer, f"unix:{socket_path}")
    try:
        os.chmod(socket_path, 0o600)
        proxy = serve_streams(pods, runtime, tls, listen, f"unix:{socket_path}", callers,
                              lambda: summary(servicer.collect_stats(StatsRequest())),
                              pages)  # fmt: skip
    except BaseException:
        grpc_server.stop(None)
        raise
    return AgentEndpoint(grpc_server, socket_path, proxy)
