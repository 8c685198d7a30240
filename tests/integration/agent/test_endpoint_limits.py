"""The agent endpoint's door (issue 16): TLS only, with the serving
certificate issued at join, and only the API server's client certificate is
served; plain text, callers without a certificate and callers with any other
certificate are refused during or right after the handshake, before any
work. Connections past the limit are closed before any work."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from agent import serving_tls
from agent.stream_proxy import StreamProxy, StreamProxyConfig
from controlplane.apiserver.tls import ensure_pki, sign_agent_csr
from controlplane.client.agents import AgentTLS, agent_csr, node_stats
from proto.agent.v1 import agent_pb2 as pb
from tests.fakes.fake_agent import FakeAgent
from tests.harness.wait import wait_for
from tests.integration.agent.test_stream_proxy import PODS, FakeRuntime, Upstream

NODE = "n1"


class Looked:
    def __init__(self) -> None:
        self.asked = 0

    def __call__(self, ns: str, name: str) -> Any:
        self.asked += 1
        return PODS.get((ns, name))


@pytest.fixture
def endpoint(tmp_path: Path) -> Iterator[tuple[StreamProxy, AgentTLS, Looked, Path]]:
    pki = ensure_pki(tmp_path / "cp")
    csr, key = agent_csr(NODE, ["127.0.0.1"])
    serving_tls.save(tmp_path / "agent", sign_agent_csr(pki, NODE, csr), key)
    context = serving_tls.server_context(tmp_path / "agent", pki.ca_pem)
    agent = FakeAgent(stats=pb.StatsResponse(node=pb.NodeStats(node_name=NODE))).start()
    upstream = Upstream()
    looked = Looked()
    proxy = StreamProxy(looked, FakeRuntime(upstream.port), context,
                        StreamProxyConfig(handshake_timeout=2.0),
                        grpc_upstream=f"127.0.0.1:{agent.port}").start()  # fmt: skip
    try:
        yield (
            proxy,
            AgentTLS(pki.ca_pem, pki.agent_client_cert_pem, pki.agent_client_key_pem),
            looked,
            tmp_path,
        )
    finally:
        proxy.stop()
        upstream.close()
        agent.stop()


EXEC = b"POST /exec/default/web/app?command=ls&stdout=1 HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nContent-Length: 0\r\n\r\n"


def closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, ssl.SSLError):
        return True


def test_the_api_server_certificate_is_served(endpoint: Any) -> None:
    proxy, tls, looked, _ = endpoint
    resp = node_stats(f"127.0.0.1:{proxy.port}", NODE, tls, timeout=10)
    assert resp.node.node_name == NODE
    raw = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    with tls.ssl_context().wrap_socket(raw, server_hostname=NODE) as sock:
        sock.sendall(EXEC)
        assert sock.recv(4096).startswith(b"HTTP/1.1 101")
    assert looked.asked == 1


def test_plain_text_is_refused_before_any_work(endpoint: Any) -> None:
    proxy, _, looked, _ = endpoint
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        sock.sendall(EXEC)
        assert closed(sock)
    with grpc.insecure_channel(f"127.0.0.1:{proxy.port}") as channel:
        from proto.agent.v1 import agent_pb2_grpc as pb_grpc

        with pytest.raises(grpc.RpcError):
            pb_grpc.AgentStub(channel).Stats(pb.StatsRequest(), timeout=5)
    assert looked.asked == 0


def test_other_callers_are_refused(endpoint: Any) -> None:
    proxy, tls, looked, tmp = endpoint
    no_cert = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    no_cert.load_verify_locations(cadata=tls.ca_pem.decode())
    # Another node's agent certificate (same CA) is not the API server's.
    other = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    other.load_verify_locations(cadata=tls.ca_pem.decode())
    other.load_cert_chain(tmp / "agent" / "serving.crt", tmp / "agent" / "serving.key")
    for context in (no_cert, other):
        raw = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        try:
            with context.wrap_socket(raw, server_hostname=NODE) as sock:
                sock.sendall(EXEC)
                assert closed(sock)
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
            pass  # refused in the handshake (TLS 1.2) or right after it (TLS 1.3)
    assert looked.asked == 0


def test_the_agent_certificate_must_name_the_node(endpoint: Any) -> None:
    proxy, tls, _, _ = endpoint
    with pytest.raises(Exception, match="agent of node n2"):
        node_stats(f"127.0.0.1:{proxy.port}", "n2", tls, timeout=5)


def test_connections_past_the_limit_are_closed_at_once() -> None:
    proxy = StreamProxy(lambda ns, n: None, None, None,  # type: ignore[arg-type]
                        StreamProxyConfig(max_connections=2)).start()  # fmt: skip
    held = []
    try:
        for _ in range(2):
            s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
            held.append(s)
        wait_for(lambda: proxy._handlers == 2, timeout=5)
        extra = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        held.append(extra)
        assert extra.recv(1) == b""  # closed without a word
    finally:
        for s in held:
            s.close()
        proxy.stop()
