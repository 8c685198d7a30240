"""Fuzz target: the agent endpoint's HTTP (issue 17), against a real
StreamProxy on 127.0.0.1 with a fake runtime whose streaming URL points at
a fake upstream that records what it is sent.

Each input is one connection's bytes: request lines (methods, versions,
paths with escapes, NULs, traversal, long ones), headers (Authorization,
Upgrade and Connection variants, folded, malformed, many, long) and a
body. Every input gets an HTTP answer with a well-formed status line or a
closed connection, within the time limit. The endpoint runs in plain text
here (who may call it is the TLS client-certificate check, tested in
tests/unit/agent/test_endpoint_limits.py); a request that reaches the
runtime reaches it once, as one clean request: the runtime's path, no
Authorization, no line the client smuggled in (a bare CR or LF in a line).
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from collections.abc import Iterator

from hypothesis import strategies as st

from agent.stream_proxy import StreamProxy, StreamProxyConfig
from proto.runtime.v1 import api_pb2 as cri

TOKEN = "good-admin-token"
_STATUS = re.compile(rb"^HTTP/1\.[01] [1-5][0-9][0-9] [^\r\n]*\r\n")


class _Upstream:
    """Records each request head it is sent, answers 101 and hangs up."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.heads: list[bytes] = []
        self._thread = threading.Thread(target=self._serve, name="fuzz-upstream", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                data = b""
                with contextlib.suppress(OSError):
                    while b"\r\n\r\n" not in data and len(data) < 1 << 20:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    self.heads.append(data)
                    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\n\r\n")

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self._thread.join(5)


class _Runtime:
    def __init__(self, port: int) -> None:
        self.port = port

    def list_containers(self, labels: dict[str, str]) -> list[cri.Container]:
        return [cri.Container(id="cid", state=cri.CONTAINER_RUNNING)]

    def list_pod_sandboxes(self, labels: dict[str, str]) -> list[cri.PodSandbox]:
        return [cri.PodSandbox(id="sb", created_at=1)]

    def _url(self, kind: str) -> str:
        return f"http://127.0.0.1:{self.port}/{kind}/tok?x=1"

    def exec(self, request: cri.ExecRequest) -> str:
        return self._url("exec")

    def attach(self, request: cri.AttachRequest) -> str:
        return self._url("attach")

    def port_forward(self, request: cri.PortForwardRequest) -> str:
        return self._url("portforward")


class _World:
    proxy: StreamProxy
    upstream: _Upstream


_world = _World()
_PODS = {("default", "web"): {"metadata": {"name": "web", "uid": "u-1"}}}


@contextlib.contextmanager
def http_session() -> Iterator[object]:
    upstream = _Upstream()
    proxy = StreamProxy(
        lambda ns, name: _PODS.get((ns, name)),
        _Runtime(upstream.port),
        None,  # plain text: the request parsing and relay, not the TLS caller check
        StreamProxyConfig(request_timeout=2.0, idle_timeout=2.0),
    ).start()
    try:
        _world.proxy, _world.upstream = proxy, upstream
        yield proxy
    finally:
        proxy.stop()
        upstream.close()


# -- inputs -------------------------------------------------------------------

_methods = st.sampled_from(["GET", "POST", "PUT", "PRI", "get", "G\x00T", "", "GET GET", "X" * 70])
_paths = st.one_of(
    st.sampled_from([
        "/exec/default/web/c?command=ls&stdout=1", "/attach/default/web/c?stdin=1&tty=1",
        "/portforward/default/web?port=80&port=443", "/portforward/default/web?port=99999",
        "/exec/default/web?container=c&command=sh&stderr=1", "/exec/default/nope/c?command=x&stdout=1",
        "/exec/%2e%2e/%2e%2e/c?command=x&stdout=1", "/exec/default/web/c%00?command=x&stdout=1",
        "/exec/default/web/c?command=a%0d%0aX-Evil:%201&stdout=1", "*", "", "//", "/" * 300,
        "http://evil.example/exec/default/web/c?command=ls&stdout=1", "/exec/default/web/" + "c" * 5000,
        "/portforward/default/web?port=-1", "/exec/default/web/c?command=%ff&stdout=1",
    ]),
    st.text(alphabet="/%?=&abc.09\x00 \x7f\u00e9", max_size=30).map(lambda p: "/" + p),
)  # fmt: skip
_versions = st.sampled_from(
    ["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/9.9", "", "HTTP/1.1 x", "http/1.1"]
)
_header = st.one_of(
    st.sampled_from([
        f"Authorization: Bearer {TOKEN}", "Authorization: Bearer wrong", "Authorization: Basic eA==",
        f"authorization:bearer {TOKEN}", "Upgrade: SPDY/3.1", "Upgrade: websocket",
        "Connection: Upgrade", "Connection: close, Upgrade", "X-Stream-Protocol-Version: v4.channel.k8s.io",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol: v5.channel.k8s.io",
        "Host: evil.example", "Content-Length: 5", "Content-Length: -1", "Content-Length: 99999999999",
        "Transfer-Encoding: chunked", " folded-continuation", "NoColonHere", ": empty-name",
        "X-Long: " + "a" * 70000, "X-Smuggle: a\rInjected: 1", "X-Nul: a\x00b", "X-Utf8: \u00e9\u4e2d",
    ]),
    st.tuples(st.text(alphabet="abXZ-:_ ", max_size=10), st.text(max_size=20)).map(
        lambda kv: f"{kv[0]}: {kv[1]}"
    ),
)  # fmt: skip
_good_paths = st.sampled_from([
    "/exec/default/web/c?command=ls&stdout=1", "/attach/default/web/c?stdin=1&tty=1",
    "/portforward/default/web?port=80", "/exec/default/web?container=c&command=sh&stderr=1",
])  # fmt: skip
http_inputs = st.one_of(
    st.tuples(_methods, _paths, _versions, st.lists(_header, max_size=6), st.binary(max_size=40),
              st.sampled_from([0, 0, 0, 150])),
    # the admin's own requests, with fuzzed headers: these reach the runtime
    st.tuples(st.sampled_from(["GET", "POST"]), _good_paths, st.just("HTTP/1.1"),
              st.lists(_header, max_size=4).map(lambda h: [f"Authorization: Bearer {TOKEN}", *h]),
              st.binary(max_size=40), st.just(0)),
    st.binary(max_size=200).map(lambda b: ("", "", "", [], b, -1)),
    st.just(("", "", "", [], b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", -1)),
)  # fmt: skip


def _request(inp: tuple[str, str, str, list[str], bytes, int]) -> bytes:
    method, path, version, headers, body, many = inp
    if many < 0:
        return body
    line = " ".join(p for p in (method, path, version) if p)
    lines = [line, *headers, *(f"X-Many-{i}: {i}" for i in range(many))]
    return "\r\n".join(lines).encode("utf-8", "surrogatepass") + b"\r\n\r\n" + body


def _one_clean_head(sent: bytes) -> None:
    """The head the upstream got (what follows it is the stream's data)."""
    head, blank, _ = sent.partition(b"\r\n\r\n")
    assert blank, "the upstream request was cut"
    # obs-fold continuation lines (a leading space) are refused, never forwarded
    lines = head.decode("latin-1").split("\r\n")
    assert not any(ln[:1] in (" ", "\t") for ln in lines), lines
    assert re.fullmatch(r"(GET|POST) /(exec|attach|portforward)/tok\?x=1 HTTP/1\.1", lines[0]), (
        lines[0]
    )
    names = [ln.split(":", 1)[0].lower() for ln in lines[1:]]
    assert all(":" in ln and "\r" not in ln and "\n" not in ln for ln in lines[1:]), lines
    assert "authorization" not in names, "the bearer token was forwarded"
    assert names.count("host") == 1 and names.count("content-length") == 1


def check_http(inp: tuple[str, str, str, list[str], bytes, int]) -> str:
    data = _request(inp)
    upstream = _world.upstream
    seen = len(upstream.heads)
    with socket.create_connection(("127.0.0.1", _world.proxy.port), timeout=4) as sock:
        with contextlib.suppress(ConnectionResetError, BrokenPipeError, OSError):
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                answer += chunk
    relayed = upstream.heads[seen:]
    # Every answer has a status line, also to a request that is not HTTP/1.x
    # (never an HTTP/0.9 answer: machinery/streaming/upgrade.py reads the head).
    assert not answer or _STATUS.match(answer), f"no status line: {answer[:200]!r}"
    if relayed:
        assert len(relayed) == 1, "one request became several upstream"
        _one_clean_head(relayed[0])
        assert answer.startswith(b"HTTP/1.1 101 "), "the runtime's answer was not relayed"
        return "ok"
    assert not answer.startswith(b"HTTP/1.1 101"), "101 without reaching the runtime"
    return "rejected"
