"""DnsServer over real UDP and TCP sockets on 127.0.0.1 (free ports).

Answers come from the fake ApiClient through informers. Forwarding goes only
to an upstream stub on 127.0.0.1 started by the test (itself a DnsServer for
another domain, with forwarding off) — never to the machine's resolvers.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from agent.proxy import dns_wire as w
from agent.proxy.dns import DnsServer, DnsSettings
from tests.fakes.endpointslices import endpoint_slice
from tests.fakes.fake_apiclient import FakeApiClient
from tests.harness.wait import wait_for


def local(**kw: Any) -> DnsSettings:
    base: dict[str, Any] = {"listen_host": "127.0.0.1", "port": 0, "forward": False}
    base.update(kw)
    return DnsSettings(**base)


def udp(addr: tuple[str, int], msg: w.Message) -> w.Message:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(5)
        s.sendto(msg.to_wire(), addr)
        return w.parse(s.recv(65535))


def tcp(addr: tuple[str, int], *msgs: w.Message) -> list[w.Message]:
    out = []
    with socket.create_connection(addr, timeout=5) as s:
        for msg in msgs:  # several queries on one connection
            data = msg.to_wire()
            s.sendall(struct.pack("!H", len(data)) + data)
            (size,) = struct.unpack("!H", s.recv(2, socket.MSG_WAITALL))
            out.append(w.parse(s.recv(size, socket.MSG_WAITALL)))
    return out


def q(name: str, qtype: int = w.A, ident: int = 99) -> w.Message:
    return w.Message(id=ident, rd=True, questions=[w.Question(name, qtype)])


def headless(n: int) -> tuple[dict[str, Any], dict[str, Any]]:
    svc = {"metadata": {"name": "big", "namespace": "default"}, "spec": {"clusterIP": "None"}}
    eps = endpoint_slice("big", [f"10.244.{i // 200}.{i % 200 + 1}" for i in range(n)], [])
    return svc, eps


@pytest.fixture
def api() -> FakeApiClient:
    api = FakeApiClient()
    api.create(
        "Service",
        {
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"clusterIP": "10.43.0.20", "ports": [{"name": "http", "port": 80}]},
        },
    )
    svc, eps = headless(100)
    api.create("Service", svc)
    api.create("EndpointSlice", eps)
    return api


@pytest.fixture
def upstream() -> Iterator[DnsServer]:
    class Stub:
        def service(self, namespace: str, name: str) -> Mapping[str, Any] | None:
            return {"spec": {"clusterIP": "192.0.2.1"}} if name == "www" else None

        def endpoint_slices(self, namespace: str, name: str) -> Sequence[Mapping[str, Any]]:
            return []

        def services_by_ip(self, ip: str) -> list[Mapping[str, Any]]:
            return []

    server = DnsServer(settings=local(domain="example.test"), lookup=Stub())
    server.start()
    yield server
    server.stop()


@pytest.fixture
def server(api: FakeApiClient, upstream: DnsServer) -> Iterator[DnsServer]:
    host, port = upstream.address
    s = DnsServer(api, local(forward=True, upstreams=(f"{host}:{port}",)))
    s.start()
    yield s
    s.stop()


def test_cluster_names_over_udp_and_tcp(server: DnsServer) -> None:
    addr = server.address
    wait_for(
        lambda: udp(addr, q("web.default.svc.cluster.local")).rcode == w.NOERROR,
        message="the informers to sync",
    )
    reply = udp(addr, q("web.default.svc.cluster.local"))
    assert reply.id == 99 and [w.read_a(r) for r in reply.answers] == ["10.43.0.20"]
    [ptr] = tcp(addr, q("20.0.43.10.in-addr.arpa", w.PTR))
    assert [w.read_name(r) for r in ptr.answers] == ["web.default.svc.cluster.local"]
    r1, r2 = tcp(
        addr,
        q("web.default.svc.cluster.local", ident=1),
        q("no.default.svc.cluster.local", ident=2),
    )
    assert (r1.id, [w.read_a(r) for r in r1.answers]) == (1, ["10.43.0.20"])
    assert (r2.id, r2.rcode) == (2, w.NXDOMAIN)


def test_big_udp_answers_are_truncated_and_complete_over_tcp(server: DnsServer) -> None:
    addr = server.address
    wait_for(lambda: udp(addr, q("web.default.svc.cluster.local")).rcode == w.NOERROR)
    small = udp(addr, q("big.default.svc.cluster.local"))
    assert small.tc and not small.answers
    edns = q("big.default.svc.cluster.local")
    edns.additionals.append(w.opt_record(4096))
    assert len(udp(addr, edns).answers) == 100  # fits in 4096 bytes
    [full] = tcp(addr, q("big.default.svc.cluster.local"))
    assert not full.tc and len(full.answers) == 100


def test_other_names_are_forwarded_to_the_upstream(server: DnsServer) -> None:
    addr = server.address
    reply = udp(addr, q("www.default.svc.example.test", ident=7))
    assert reply.id == 7 and [w.read_a(r) for r in reply.answers] == ["192.0.2.1"]
    [over_tcp] = tcp(addr, q("www.default.svc.example.test", ident=8))
    assert over_tcp.id == 8 and [w.read_a(r) for r in over_tcp.answers] == ["192.0.2.1"]
    # The stub has forwarding off: a name outside its domain comes back REFUSED.
    assert udp(addr, q("example.org")).rcode == w.REFUSED


def test_no_forwarding_refuses_and_a_dead_upstream_is_servfail(api: FakeApiClient) -> None:
    off = DnsServer(api, local())
    off.start()
    try:
        assert udp(off.address, q("example.org")).rcode == w.REFUSED
    finally:
        off.stop()
    # An upstream port nobody listens on (bound, then closed) on 127.0.0.1.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    broken = DnsServer(
        api, local(forward=True, upstreams=(f"127.0.0.1:{dead}",), upstream_timeout=0.3)
    )
    broken.start()
    try:
        reply = udp(broken.address, q("example.org", ident=5))
        assert (reply.id, reply.rcode) == (5, w.SERVFAIL)
    finally:
        broken.stop()


def test_not_synced_is_servfail_not_nxdomain() -> None:
    class NotReady:
        def ready(self) -> bool:
            return False

        def service(self, namespace: str, name: str) -> Mapping[str, Any] | None:
            return None

        def endpoint_slices(self, namespace: str, name: str) -> Sequence[Mapping[str, Any]]:
            return []

        def services_by_ip(self, ip: str) -> list[Mapping[str, Any]]:
            return []

    s = DnsServer(settings=local(), lookup=NotReady())
    s.start()
    try:
        assert udp(s.address, q("web.default.svc.cluster.local")).rcode == w.SERVFAIL
    finally:
        s.stop()


def test_garbage_gets_formerr_or_nothing(server: DnsServer) -> None:
    # Answering first (SERVFAIL until the informers have synced), so that the
    # answer after the garbage says the garbage did no harm.
    wait_for(lambda: udp(server.address, q("10-1-2-3.x.pod.cluster.local")).answers,
             message="the informers to sync")  # fmt: skip
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(5)
        s.sendto(b"\x12\x34" + b"\x00\x00\x00\x05" + b"\x00" * 6 + b"\x07", server.address)
        reply = w.parse(s.recv(512))
    assert (reply.id, reply.rcode) == (0x1234, w.FORMERR)
    # The server still answers afterwards.
    assert udp(server.address, q("10-1-2-3.x.pod.cluster.local")).answers


def test_a_pods_relative_name_with_dots_resolves_under_its_search_list(
    api: FakeApiClient, upstream: DnsServer
) -> None:
    """busybox's nslookup sends `<host>.<svc>` as it stands: the server tries
    it under the asking pod's search list; other clients go upstream."""
    host, port = upstream.address
    pods = {"127.0.0.1": "default"}
    s = DnsServer(api, local(forward=True, upstreams=(f"{host}:{port}",)), pod_namespace=pods.get)
    s.start()
    try:
        addr = s.address
        wait_for(lambda: udp(addr, q("web.default.svc.cluster.local")).rcode == w.NOERROR)
        reply = udp(addr, q("10-244-0-1.big"))
        assert reply.rcode == w.NOERROR
        assert [w.read_name(r) for r in reply.answers if r.rtype == w.CNAME] == [
            "10-244-0-1.big.default.svc.cluster.local"
        ]
        assert [w.read_a(r) for r in reply.answers if r.rtype == w.A] == ["10.244.0.1"]
        [over_tcp] = tcp(addr, q("web.default", w.AAAA))
        assert [r.rtype for r in over_tcp.answers] == [w.CNAME]
        pods.clear()  # not a pod of this node: forwarded (the stub refuses it)
        assert udp(addr, q("10-244-0-1.big")).rcode == w.REFUSED
    finally:
        s.stop()


def test_slow_tcp_clients_do_not_stop_udp_or_other_tcp_clients(api: FakeApiClient) -> None:
    """Eight (here sixty) connections trickling a query byte by byte took every
    worker, and UDP queries queued behind them unboundedly (issue 32)."""
    settings = local()  # the defaults: 2 s to send a query, 128 connections
    server = DnsServer(api, settings)
    server.start()
    slow: list[socket.socket] = []
    try:
        wait_for(lambda: udp(server.address, q("web.default.svc.cluster.local")).answers, 10)
        for _ in range(60):
            s = socket.create_connection(server.address, timeout=5)
            s.sendall(b"\x00")  # the first byte of a length, and nothing more
            slow.append(s)
        for i in range(20):
            reply = udp(server.address, q("web.default.svc.cluster.local", ident=i))
            assert reply.id == i and [w.read_a(r) for r in reply.answers] == ["10.43.0.20"]
        (reply,) = tcp(server.address, q("web.default.svc.cluster.local", ident=7))
        assert reply.id == 7 and reply.answers
        # Past the read deadline every slow connection is closed by the server.
        for s in slow:
            s.settimeout(10)
            assert s.recv(1) == b""
        # More connections than allowed are closed at once.
        crowd = [socket.create_connection(server.address, timeout=5)
                 for _ in range(settings.tcp_connections)]  # fmt: skip
        extra = socket.create_connection(server.address, timeout=5)
        extra.settimeout(5)
        assert extra.recv(1) == b""
        for s in [*crowd, extra]:
            s.close()
    finally:
        for s in slow:
            s.close()
        server.stop()
