"""The cluster DNS responder: a small DNS server over UDP and TCP.

Names in the cluster domain are answered by `ClusterResolver` from the
Service and EndpointSlice informer stores (SERVFAIL until those have synced, so a
starting node never denies a name that exists). Other names are forwarded,
as raw messages, to upstream servers (by default the `nameserver` lines of
the host's /etc/resolv.conf, minus our own address), over the transport the
client used; with forwarding off or no upstream they are REFUSED, and when
every upstream fails the answer is SERVFAIL. UDP replies that do not fit
(512 bytes, or the client's EDNS size) are truncated with TC set, so the
client retries over TCP.

A query from a pod of this node (its address known to `pod_namespace`) for
a relative name with dots that is not in the domain is first tried under
that pod's search list (`ClusterResolver.search`), since busybox's nslookup
sends such names without applying the search list itself.

One thread waits on the sockets and reads TCP connections without blocking,
so a slow client holds no thread: a query must arrive whole within
`tcp_read_timeout` of its first byte and a connection idle longer than
`tcp_idle_timeout` is closed (CoreDNS' read and idle deadlines), at most
`tcp_connections` are open at once (more are closed on accept), and a
connection has one query in hand at a time. Whole queries go to two small
pools, one for UDP and one for TCP, each behind a bounded queue (a UDP query
that finds its queue full is dropped, as a busy resolver drops; the client
asks again): eight, or eight hundred, slow TCP clients never take the
threads or the queue UDP answers need, and a slow upstream never stalls
cluster answers. This module never writes to the API server, never answers
for a name outside the cluster domain itself, and sends nothing anywhere but
to the configured upstreams.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.proxy import dns_wire as w
from agent.proxy.dns_resolver import ClusterResolver, Lookup
from agent.proxy.local_address import DEFAULT_IFNAME
from controlplane.client import endpointslices
from controlplane.client.informer import SharedInformer, SharedInformerFactory
from controlplane.client.interface import ApiClient
from machinery.clock import Clock

log = logging.getLogger("skiff.agent.dns")

MAX_UDP = 512
MAX_EDNS = 4096


@dataclass(frozen=True)
class DnsSettings:
    listen_host: str = "10.43.0.10"
    port: int = 53
    # The dummy interface that holds listen_host (local_address.py); another
    # name for a second agent on the same host, so neither removes the other's.
    interface: str = DEFAULT_IFNAME
    domain: str = "cluster.local"
    ttl: int = 5
    forward: bool = True
    # "host" or "host:port" ("[v6]:port"); None: the resolv_conf's nameservers.
    upstreams: tuple[str, ...] | None = None
    resolv_conf: str = "/etc/resolv.conf"
    upstream_timeout: float = 2.0
    workers: int = 8  # UDP queries at once; TCP ones get half as many threads of their own
    queue: int = 256  # queries waiting for a thread, per transport
    tcp_connections: int = 128
    tcp_read_timeout: float = 2.0  # a query's bytes, from its first to its last
    tcp_idle_timeout: float = 10.0  # a connection with no query under way
    tcp_write_timeout: float = 5.0


def parse_upstream(text: str) -> tuple[str, int]:
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else 53
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return host, int(port)
    return text, 53


def resolv_conf_nameservers(path: str) -> list[str]:
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "nameserver":
            out.append(parts[1].split("%", 1)[0])
    return out


CLUSTER_IP_INDEX = "skiff-dns/clusterIP"


def _cluster_ip_index(obj: Mapping[str, Any]) -> list[str]:
    ip = (obj.get("spec") or {}).get("clusterIP")
    return [str(ip)] if ip and ip != "None" else []


class StoreLookup:
    """`Lookup` over the Service and EndpointSlice informers' stores."""

    def __init__(self, services: SharedInformer, slices: SharedInformer) -> None:
        self.services = services
        self.slices = slices
        with contextlib.suppress(ValueError):  # another StoreLookup added it
            services.add_indexers({CLUSTER_IP_INDEX: _cluster_ip_index})
        with contextlib.suppress(ValueError):
            slices.add_indexers({endpointslices.SERVICE_INDEX: endpointslices.service_index})

    def services_by_ip(self, ip: str) -> list[Mapping[str, Any]]:
        return list(self.services.store.by_index(CLUSTER_IP_INDEX, ip))

    def ready(self) -> bool:
        return self.services.has_synced() and self.slices.has_synced()

    def service(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.services.store.get(name, namespace)

    def endpoint_slices(self, namespace: str, name: str) -> Sequence[Mapping[str, Any]]:
        return self.slices.store.by_index(endpointslices.SERVICE_INDEX, f"{namespace}/{name}")


def _fit_udp(reply: w.Message, query: w.Message | None) -> bytes:
    data = reply.to_wire()
    limit = MAX_UDP
    opt = query.edns() if query is not None else None
    if opt is not None:
        limit = max(MAX_UDP, min(opt.rclass, MAX_EDNS))
    if len(data) <= limit:
        return data
    reply.tc = True
    reply.answers, reply.authorities = [], []
    reply.additionals = [r for r in reply.additionals if r.rtype == w.OPT]
    return reply.to_wire()


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    buf = bytearray()
    while len(buf) < size:
        chunk = sock.recv(size - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return bytes(buf)


@dataclass
class _Conn:
    """One TCP client: what it sent so far and until when it may take."""

    sock: socket.socket
    client: str
    deadline: float
    buffer: bytearray = field(default_factory=bytearray)
    busy: bool = False  # a query of it is being answered


class DnsServer:
    def __init__(
        self,
        api: ApiClient | None = None,
        settings: DnsSettings | None = None,
        informers: SharedInformerFactory | None = None,
        clock: Clock | None = None,
        lookup: Lookup | None = None,
        pod_namespace: Callable[[str], str | None] | None = None,
    ) -> None:
        self.settings = settings or DnsSettings()
        # a client address -> the namespace of the pod of this node that has it
        self.pod_namespace = pod_namespace
        self._factory: SharedInformerFactory | None = None
        self._own_factory = False
        if lookup is None:
            if informers is None:
                if api is None:
                    raise ValueError("DnsServer needs an api, an informer factory or a lookup")
                informers = SharedInformerFactory(api, clock=clock)
                self._own_factory = True
            self._factory = informers
            lookup = StoreLookup(
                informers.informer_for("Service"), informers.informer_for("EndpointSlice")
            )
        self.lookup = lookup
        self.resolver = ClusterResolver(lookup, self.settings.domain, self.settings.ttl)
        self._udp: socket.socket | None = None
        self._tcp: socket.socket | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Whole queries waiting for a thread, per transport (None: a worker's stop).
        self._udp_jobs: queue.Queue[tuple[bytes, Any] | None] = queue.Queue(self.settings.queue)
        self._tcp_jobs: queue.Queue[tuple[_Conn, bytes] | None] = queue.Queue(self.settings.queue)
        self._workers: list[threading.Thread] = []
        self._conns: dict[socket.socket, _Conn] = {}
        self._returned: queue.SimpleQueue[_Conn] = queue.SimpleQueue()  # answered: read on
        self.dropped = 0  # UDP queries dropped with their queue full
        self.address: tuple[str, int] = (self.settings.listen_host, self.settings.port)

    # ---- lifecycle -----------------------------------------------------------

    def upstreams(self) -> list[tuple[str, int]]:
        if not self.settings.forward:
            return []
        names = self.settings.upstreams
        if names is None:
            names = tuple(resolv_conf_nameservers(self.settings.resolv_conf))
        out = [parse_upstream(n) for n in names]
        return [u for u in out if u != self.address]

    def _bind(self) -> None:
        host, port = self.settings.listen_host, self.settings.port
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        for _ in range(20):  # port 0: find one free for both UDP and TCP
            udp = socket.socket(family, socket.SOCK_DGRAM)
            tcp = socket.socket(family, socket.SOCK_STREAM)
            try:
                udp.bind((host, port))
                tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                tcp.bind((host, udp.getsockname()[1]))
                tcp.listen(64)
            except OSError:
                udp.close()
                tcp.close()
                if port:
                    raise
                continue
            self._udp, self._tcp = udp, tcp
            self.address = (host, int(udp.getsockname()[1]))
            return
        raise OSError("no free port for both UDP and TCP")

    def start(self) -> None:
        if self._thread is not None:
            return
        self._bind()
        if self._factory is not None:
            self._factory.start()
        self._thread = threading.Thread(target=self._serve, name="dns", daemon=True)
        self._thread.start()
        tcp_workers = max(2, self.settings.workers // 2)
        for i in range(self.settings.workers):
            self._start_worker(self._udp_worker, f"dns-udp-{i}")
        for i in range(tcp_workers):
            self._start_worker(self._tcp_worker, f"dns-tcp-{i}")
        log.info("dns listening", extra={"address": f"{self.address[0]}:{self.address[1]}"})

    def _start_worker(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._workers.append(thread)

    def stop(self) -> None:
        self._stop.set()
        self._wake()
        if self._thread is not None:
            self._thread.join(5)
        for client in list(self._conns):
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RDWR)
        for jobs in (self._udp_jobs, self._tcp_jobs):
            with contextlib.suppress(queue.Empty):
                while True:  # queued work is dropped; every worker finds its stop
                    jobs.get_nowait()
        for thread in self._workers:
            (self._udp_jobs if thread.name.startswith("dns-udp") else self._tcp_jobs).put(None)
        for thread in self._workers:
            thread.join(5)
        for client in list(self._conns):
            client.close()
        self._conns.clear()
        for own in (self._udp, self._tcp, self._wake_r, self._wake_w):
            if own is not None:
                own.close()
        if self._own_factory and self._factory is not None:
            self._factory.shutdown()

    # ---- serving ---------------------------------------------------------------

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def _serve(self) -> None:
        assert self._udp is not None and self._tcp is not None
        sel = selectors.DefaultSelector()
        sel.register(self._udp, selectors.EVENT_READ, "udp")
        sel.register(self._tcp, selectors.EVENT_READ, "tcp")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        try:
            while not self._stop.is_set():
                for key, _ in sel.select(self._next_deadline()):
                    try:
                        if key.data == "wake":
                            with contextlib.suppress(OSError):
                                self._wake_r.recv(4096)
                        elif key.data == "udp":
                            self._read_udp()
                        elif key.data == "tcp":
                            self._accept(sel)
                        else:
                            self._read_tcp(sel, key.data)
                    except OSError as err:
                        log.debug("dns socket error: %s", err)
                self._take_back(sel)
                self._expire(sel)
        finally:
            sel.close()

    # UDP: one datagram, one job, or none when the queue is full.

    def _read_udp(self) -> None:
        assert self._udp is not None
        data, peer = self._udp.recvfrom(65535)
        try:
            self._udp_jobs.put_nowait((data, peer))
        except queue.Full:
            self.dropped += 1

    def _udp_worker(self) -> None:
        while True:
            job = self._udp_jobs.get()
            if job is None:
                return
            data, peer = job
            try:
                reply = self.handle(data, tcp=False, client=str(peer[0]))
                if reply is not None and self._udp is not None:
                    self._udp.sendto(reply, peer)
            except Exception:  # one bad query never takes a worker down
                log.debug("dns: a UDP query failed", exc_info=True)

    # TCP: read without blocking; a whole query goes to the TCP pool.

    def _accept(self, sel: selectors.BaseSelector) -> None:
        assert self._tcp is not None
        sock, peer = self._tcp.accept()
        if len(self._conns) >= self.settings.tcp_connections:
            sock.close()  # full: refused before any work is spent on it
            return
        sock.setblocking(False)
        conn = _Conn(sock, str(peer[0]), time.monotonic() + self.settings.tcp_idle_timeout)
        self._conns[sock] = conn
        sel.register(sock, selectors.EVENT_READ, conn)

    def _read_tcp(self, sel: selectors.BaseSelector, conn: _Conn) -> None:
        try:
            chunk = conn.sock.recv(65537 - len(conn.buffer))
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._close(sel, conn)
            return
        if not conn.buffer:  # the first byte of a query: it has this long to arrive whole
            conn.deadline = time.monotonic() + self.settings.tcp_read_timeout
        conn.buffer += chunk
        self._dispatch(sel, conn)

    def _dispatch(self, sel: selectors.BaseSelector, conn: _Conn) -> None:
        if len(conn.buffer) < 2:
            return
        (size,) = struct.unpack("!H", conn.buffer[:2])
        if len(conn.buffer) < 2 + size:
            return
        data = bytes(conn.buffer[2 : 2 + size])
        del conn.buffer[: 2 + size]
        try:
            self._tcp_jobs.put_nowait((conn, data))
        except queue.Full:
            self._close(sel, conn)  # no room: the client asks again on a new connection
            return
        conn.busy = True
        sel.unregister(conn.sock)  # one query in hand at a time

    def _tcp_worker(self) -> None:
        while True:
            job = self._tcp_jobs.get()
            if job is None:
                return
            conn, data = job
            keep = False
            try:
                reply = self.handle(data, tcp=True, client=conn.client)
                if reply is not None:
                    conn.sock.settimeout(self.settings.tcp_write_timeout)
                    conn.sock.sendall(struct.pack("!H", len(reply)) + reply)
                    conn.sock.setblocking(False)
                    keep = True
            except Exception:
                log.debug("dns: a TCP query failed", exc_info=True)
            conn.busy = keep
            if not keep:
                with contextlib.suppress(OSError):
                    conn.sock.shutdown(socket.SHUT_RDWR)
            self._returned.put(conn)
            self._wake()

    def _take_back(self, sel: selectors.BaseSelector) -> None:
        """Connections a worker answered: read on (or close what it gave up)."""
        while True:
            try:
                conn = self._returned.get_nowait()
            except queue.Empty:
                return
            if conn.sock not in self._conns:
                continue
            if not conn.busy or self._stop.is_set():
                self._close(sel, conn, registered=False)
                continue
            conn.busy = False
            timeout = (self.settings.tcp_read_timeout if conn.buffer
                       else self.settings.tcp_idle_timeout)  # fmt: skip
            conn.deadline = time.monotonic() + timeout
            sel.register(conn.sock, selectors.EVENT_READ, conn)
            self._dispatch(sel, conn)  # a query pipelined behind the one answered

    def _next_deadline(self) -> float | None:
        waiting = [c.deadline for c in self._conns.values() if not c.busy]
        return max(0.0, min(waiting) - time.monotonic()) if waiting else None

    def _expire(self, sel: selectors.BaseSelector) -> None:
        now = time.monotonic()
        for conn in [c for c in self._conns.values() if not c.busy and c.deadline <= now]:
            self._close(sel, conn)

    def _close(self, sel: selectors.BaseSelector, conn: _Conn, registered: bool = True) -> None:
        self._conns.pop(conn.sock, None)
        if registered:
            with contextlib.suppress(KeyError, ValueError):
                sel.unregister(conn.sock)
        conn.sock.close()

    def handle(self, data: bytes, tcp: bool, client: str | None = None) -> bytes | None:
        """The reply to one query from address `client` (None: drop it)."""
        try:
            query = w.parse(data)
        except w.FormatError:
            ident = w.header_id(data)
            if ident is None or len(data) < w.HEADER.size:
                return None
            return w.Message(id=ident, qr=True, rcode=w.FORMERR).to_wire()
        if query.qr:
            return None  # a response sent to us: never answer those
        reply: w.Message | None
        in_domain = len(query.questions) == 1 and self.resolver.in_domain(query.questions[0].name)
        ready = getattr(self.lookup, "ready", None)
        if in_domain and ready is not None and not ready():
            reply = self.resolver.reply(query, w.SERVFAIL)
        else:
            reply = self.resolver.answer(query)  # None: not ours to answer
            if reply is None and not in_domain:
                reply = self._search(query, client)
        if reply is None:
            return self._forward(query, data, tcp)
        return reply.to_wire() if tcp else _fit_udp(reply, query)

    def _search(self, query: w.Message, client: str | None) -> w.Message | None:
        """The answer under the asking pod's search list, if it has one."""
        if client is None or self.pod_namespace is None:
            return None
        ready = getattr(self.lookup, "ready", None)
        if ready is not None and not ready():
            return None
        namespace = self.pod_namespace(client)
        return self.resolver.search(query, namespace) if namespace else None

    # ---- forwarding ------------------------------------------------------------

    def _forward(self, query: w.Message, data: bytes, tcp: bool) -> bytes:
        upstreams = self.upstreams()
        if not upstreams:
            return self._error(query, w.REFUSED, tcp)
        for host, port in upstreams:
            try:
                answer = self._ask(host, port, data, tcp)
            except (OSError, ConnectionError, ValueError) as err:
                log.debug("upstream %s:%d failed: %s", host, port, err)
                continue
            if w.header_id(answer) == query.id:
                return answer
        return self._error(query, w.SERVFAIL, tcp)

    def _error(self, query: w.Message, rcode: int, tcp: bool) -> bytes:
        reply = self.resolver.reply(query, rcode)
        reply.aa = False
        return reply.to_wire() if tcp else _fit_udp(reply, query)

    def _ask(self, host: str, port: int, data: bytes, tcp: bool) -> bytes:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        timeout = self.settings.upstream_timeout
        if tcp:
            with socket.create_connection((host, port), timeout=timeout) as sock:
                sock.sendall(struct.pack("!H", len(data)) + data)
                (size,) = struct.unpack("!H", _recv_exact(sock, 2))
                return _recv_exact(sock, size)
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            sock.settimeout(timeout)
            sock.connect((host, port))
            sock.send(data)
            want = data[:2]
            while True:
                answer = sock.recv(65535)
                if answer[:2] == want:
                    return answer
