"""The cluster DNS responder: a small DNS server over UDP and TCP.

Names in the cluster domain are answered by `ClusterResolver` from the
Service and Endpoints informer stores (SERVFAIL until those have synced, so a
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

One thread waits on the sockets; queries are handled on a small pool, so a
slow upstream never stalls cluster answers. This module never writes to the
API server, never answers for a name outside the cluster domain itself, and
sends nothing anywhere but to the configured upstreams.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import struct
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.proxy import dns_wire as w
from agent.proxy.dns_resolver import ClusterResolver, Lookup
from agent.proxy.local_address import DEFAULT_IFNAME
from controlplane.client.informer import SharedInformer, SharedInformerFactory
from controlplane.client.interface import ApiClient
from machinery.clock import Clock

log = logging.getLogger("skiff.agent.dns")

MAX_UDP = 512
MAX_EDNS = 4096
TCP_IDLE = 5.0


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
    workers: int = 8


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
    """`Lookup` over the Service and Endpoints informers' stores."""

    def __init__(self, services: SharedInformer, endpoints: SharedInformer) -> None:
        self.services = services
        self.endpoints_informer = endpoints
        with contextlib.suppress(ValueError):  # another StoreLookup added it
            services.add_indexers({CLUSTER_IP_INDEX: _cluster_ip_index})

    def services_by_ip(self, ip: str) -> list[Mapping[str, Any]]:
        return list(self.services.store.by_index(CLUSTER_IP_INDEX, ip))

    def ready(self) -> bool:
        return self.services.has_synced() and self.endpoints_informer.has_synced()

    def service(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.services.store.get(name, namespace)

    def endpoints(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.endpoints_informer.store.get(name, namespace)


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
                informers.informer_for("Service"), informers.informer_for("Endpoints")
            )
        self.lookup = lookup
        self.resolver = ClusterResolver(lookup, self.settings.domain, self.settings.ttl)
        self._udp: socket.socket | None = None
        self._tcp: socket.socket | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(self.settings.workers, thread_name_prefix="dns")
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
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
        log.info("dns listening", extra={"address": f"{self.address[0]}:{self.address[1]}"})

    def stop(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        if self._thread is not None:
            self._thread.join(5)
        with self._conns_lock:
            for conn in list(self._conns):
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
        self._pool.shutdown(wait=True, cancel_futures=True)
        for sock in (self._udp, self._tcp, self._wake_r, self._wake_w):
            if sock is not None:
                sock.close()
        if self._own_factory and self._factory is not None:
            self._factory.shutdown()

    # ---- serving ---------------------------------------------------------------

    def _serve(self) -> None:
        assert self._udp is not None and self._tcp is not None
        sel = selectors.DefaultSelector()
        sel.register(self._udp, selectors.EVENT_READ, "udp")
        sel.register(self._tcp, selectors.EVENT_READ, "tcp")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        try:
            while not self._stop.is_set():
                for key, _ in sel.select():
                    if key.data == "wake":
                        return
                    try:
                        if key.data == "udp":
                            data, peer = self._udp.recvfrom(65535)
                            self._pool.submit(self._udp_query, data, peer)
                        else:
                            conn, _peer = self._tcp.accept()
                            self._pool.submit(self._tcp_conn, conn)
                    except RuntimeError:
                        return  # the pool is shutting down
                    except OSError as err:
                        log.debug("dns socket error: %s", err)
        finally:
            sel.close()

    def _udp_query(self, data: bytes, peer: Any) -> None:
        reply = self.handle(data, tcp=False, client=str(peer[0]))
        if reply is not None and self._udp is not None:
            with contextlib.suppress(OSError):
                self._udp.sendto(reply, peer)

    def _tcp_conn(self, conn: socket.socket) -> None:
        with self._conns_lock:
            self._conns.add(conn)
        try:
            conn.settimeout(TCP_IDLE)
            client = str(conn.getpeername()[0])
            while not self._stop.is_set():
                (size,) = struct.unpack("!H", _recv_exact(conn, 2))
                reply = self.handle(_recv_exact(conn, size), tcp=True, client=client)
                if reply is None:
                    return
                conn.sendall(struct.pack("!H", len(reply)) + reply)
        except (OSError, ConnectionError):
            pass
        finally:
            with self._conns_lock:
                self._conns.discard(conn)
            conn.close()

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
