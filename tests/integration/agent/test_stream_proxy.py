"""The agent's streaming endpoint: parsing, lookups and the byte relay (in
plain text; TLS and who may call are test_endpoint_limits.py's).

The runtime is a fake `StreamRuntime` whose URLs lead to a tiny upstream
HTTP server of the test's own: it records the request it got, answers
101 and then echoes upper-cased bytes, so the relay is checked without any
SPDY. gRPC sharing the port is checked with the fake agent endpoint of
test_logs.py.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from agent.cri_client import CRIError
from agent.pod_config import CONTAINER_NAME_LABEL, POD_UID_LABEL
from agent.stream_proxy import StreamProxy, StreamProxyConfig
from proto.agent.v1 import agent_pb2 as pb
from proto.agent.v1 import agent_pb2_grpc as pb_grpc
from proto.runtime.v1 import api_pb2 as cri
from tests.fakes.fake_agent import FakeAgent
from tests.harness.wait import wait_for

TOKEN = "admin-token"  # the proxy must drop it, never pass it on


class Upstream:
    """A raw HTTP/1.1 server: records the head, answers 101 (or `status`), echoes upper."""

    def __init__(self, status: int = 101) -> None:
        self.status = status
        self.heads: list[str] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.finished = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            raw, _, rest = head.partition(b"\r\n\r\n")
            self.heads.append(raw.decode())
            if self.status != 101:
                body = b"404 page not found\n"
                conn.sendall(
                    f"HTTP/1.1 {self.status} Not Found\r\nContent-Length: {len(body)}\r\n"
                    "Connection: close\r\n\r\n".encode()
                    + body
                )
                return
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\n\r\n")
            # The agent may end the relay first (stop()): a peer gone is fine.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                if rest:
                    conn.sendall(rest.upper())
                while True:
                    data = conn.recv(4096)
                    if not data:
                        break
                    conn.sendall(data.upper())
                conn.sendall(b"BYE")
        self.finished.set()

    def close(self) -> None:
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes a waiting accept()
        except OSError:
            pass
        self.thread.join(5)
        self.listener.close()


@dataclass
class FakeRuntime:
    upstream_port: int
    running: bool = True
    containers: bool = True
    calls: list[Any] = field(default_factory=list)
    fail: CRIError | None = None

    def list_containers(self, labels: dict[str, str]) -> list[cri.Container]:
        self.calls.append(("list", labels))
        if not self.containers:
            return []
        state = cri.CONTAINER_RUNNING if self.running else cri.CONTAINER_EXITED
        return [
            cri.Container(id="old", state=cri.CONTAINER_EXITED),
            cri.Container(id="cid", state=state, metadata=cri.ContainerMetadata(attempt=1)),
        ]

    def list_pod_sandboxes(self, labels: dict[str, str]) -> list[cri.PodSandbox]:
        return [cri.PodSandbox(id="sb1", created_at=1), cri.PodSandbox(id="sb2", created_at=2)]

    def _url(self, kind: str, request: Any) -> str:
        if self.fail is not None:
            raise self.fail
        self.calls.append((kind, request))
        return f"http://127.0.0.1:{self.upstream_port}/{kind}/tok123?x=1"

    def exec(self, request: cri.ExecRequest) -> str:
        return self._url("exec", request)

    def attach(self, request: cri.AttachRequest) -> str:
        return self._url("attach", request)

    def port_forward(self, request: cri.PortForwardRequest) -> str:
        return self._url("portforward", request)


PODS = {("default", "web"): {"metadata": {"name": "web", "uid": "u-1"}}}


@dataclass
class Stack:
    upstream: Upstream
    runtime: FakeRuntime
    proxy: StreamProxy


@pytest.fixture
def stack() -> Iterator[Stack]:
    upstream = Upstream()
    runtime = FakeRuntime(upstream.port)
    proxy = StreamProxy(
        lambda ns, name: PODS.get((ns, name)), runtime, None, StreamProxyConfig()
    ).start()
    try:
        yield Stack(upstream, runtime, proxy)
    finally:
        proxy.stop()
        upstream.close()


def request(port: int, path: str, token: str = TOKEN, extra: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    lines = [
        f"POST {path} HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Connection: Upgrade",
        "Upgrade: SPDY/3.1",
        "X-Stream-Protocol-Version: v4.channel.k8s.io",
        "X-Stream-Protocol-Version: v3.channel.k8s.io",
        "Content-Length: 0",
    ]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + extra)
    return sock


def read_until(sock: socket.socket, needle: bytes) -> bytes:
    out = b""
    while needle not in out:
        chunk = sock.recv(4096)
        if not chunk:
            break
        out += chunk
    return out


def read_all(sock: socket.socket) -> bytes:
    out = b""
    while chunk := sock.recv(4096):
        out += chunk
    return out


def answer(port: int, path: str, token: str = TOKEN) -> tuple[int, bytes]:
    with request(port, path, token) as sock:
        data = read_all(sock)
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def test_exec_relays_upgrade_and_bytes_both_ways(stack: Stack) -> None:
    path = "/exec/default/web/app?command=echo&command=hi&stdin=1&stdout=1&stderr=1"
    sock = request(stack.proxy.port, path, extra=b"early")
    with sock:
        head = read_until(sock, b"EARLY")
        assert head.startswith(b"HTTP/1.1 101 ")
        sock.sendall(b"abc")
        assert read_until(sock, b"ABC").endswith(b"ABC")
        sock.shutdown(socket.SHUT_WR)  # the half-close reaches the runtime...
        assert read_all(sock) == b"BYE"  # ...and its close reaches us
    [(_, labels), (kind, req)] = stack.runtime.calls
    assert labels == {POD_UID_LABEL: "u-1", CONTAINER_NAME_LABEL: "app"}
    assert kind == "exec" and req.container_id == "cid"
    assert list(req.cmd) == ["echo", "hi"] and req.stdin and req.stdout and req.stderr
    assert not req.tty
    [upstream_head] = stack.upstream.heads
    lines = upstream_head.split("\r\n")
    assert lines[0] == "POST /exec/tok123?x=1 HTTP/1.1"
    assert f"Host: 127.0.0.1:{stack.upstream.port}" in lines
    assert "Upgrade: SPDY/3.1" in lines and "Connection: Upgrade" in lines
    assert lines.count("X-Stream-Protocol-Version: v4.channel.k8s.io") == 1
    assert "X-Stream-Protocol-Version: v3.channel.k8s.io" in lines
    assert not any(line.lower().startswith("authorization") for line in lines)
    wait_for(lambda: not stack.proxy._live, timeout=5)


def test_attach_and_portforward_ask_the_runtime(stack: Stack) -> None:
    with request(stack.proxy.port, "/attach/default/web/app?stdin=1&stdout=1&tty=1&stderr=1") as s:
        assert read_until(s, b"\r\n\r\n").startswith(b"HTTP/1.1 101")
    kind, req = stack.runtime.calls[-1]
    assert kind == "attach" and req.tty and req.stdin and not req.stderr


def test_portforward_uses_newest_sandbox() -> None:
    upstream = Upstream()
    runtime = FakeRuntime(upstream.port)
    with (
        StreamProxy(lambda ns, n: PODS.get((ns, n)), runtime, None) as proxy,
        request(proxy.port, "/portforward/default/web?port=80", token="") as s,
    ):
        assert read_until(s, b"\r\n\r\n").startswith(b"HTTP/1.1 101")
    upstream.close()
    kind, req = runtime.calls[-1]
    assert kind == "portforward" and req.pod_sandbox_id == "sb2" and list(req.port) == [80]


def test_refusals(stack: Stack) -> None:
    port = stack.proxy.port
    ok = "/exec/default/web/app?command=ls&stdout=1"
    code, body = answer(port, "/exec/default/nope/app?command=ls&stdout=1")
    assert code == 404 and b'pod "nope" not found' in body
    assert answer(port, "/bogus")[0] == 404
    stack.runtime.running = False
    code, body = answer(port, ok)
    assert code == 400 and b"is not running" in body
    stack.runtime.containers = False
    code, body = answer(port, ok)
    assert code == 404 and b'container "app" not found' in body
    stack.runtime.containers = True
    stack.runtime.running = True
    stack.runtime.fail = CRIError("Exec", grpc.StatusCode.UNAVAILABLE, "runtime down")
    code, body = answer(port, ok)
    assert code == 500 and b"runtime down" in body
    assert stack.upstream.heads == []  # nothing reached the runtime's server


def test_runtime_answer_passes_through() -> None:
    upstream = Upstream(status=404)
    runtime = FakeRuntime(upstream.port)
    with StreamProxy(lambda ns, n: PODS.get((ns, n)), runtime, None) as proxy:
        code, body = answer(proxy.port, "/exec/default/web/app?command=ls&stdout=1", token="")
    upstream.close()
    assert code == 404 and body == b"404 page not found\n"


def test_stop_ends_live_relays(stack: Stack) -> None:
    sock = request(stack.proxy.port, "/exec/default/web/app?command=ls&stdout=1")
    with sock:
        assert read_until(sock, b"\r\n\r\n").startswith(b"HTTP/1.1 101")
        wait_for(lambda: len(stack.proxy._live) == 2, timeout=5)
        stack.proxy.stop()
        try:
            assert read_all(sock) == b""
        except ConnectionResetError:
            pass
    assert not stack.proxy._live


def test_grpc_shares_the_port() -> None:
    agent = FakeAgent(stats=pb.StatsResponse(node=pb.NodeStats(node_name="n1"))).start()
    upstream = Upstream()
    try:
        proxy = StreamProxy(
            lambda ns, n: PODS.get((ns, n)),
            FakeRuntime(upstream.port),
            None,
            grpc_upstream=f"127.0.0.1:{agent.port}",
        ).start()
        try:
            with grpc.insecure_channel(f"127.0.0.1:{proxy.port}") as channel:
                stub = pb_grpc.AgentStub(channel)
                for _ in range(3):
                    assert stub.Stats(pb.StatsRequest(), timeout=10).node.node_name == "n1"
        finally:
            proxy.stop()
    finally:
        upstream.close()
        agent.stop()
