"""The agent's streaming endpoint: parsing, lookups and the byte relay (in
plain text; TLS and who may call are test_endpoint_limits.py's).

The runtime is a fake `StreamRuntime` whose URLs lead to a tiny upstream
HTTP server of the test's own: it records the request it got, answers
101 and then echoes upper-cased bytes, so the relay is checked without any
SPDY. gRPC sharing the port is checked with the fake agent endpoint of
test_logs.py.
"""

from __future__ import annotations

import socket

import pytest

from agent.request_target import parse
from agent.stream_targets import RequestError, parse_target

TOKEN = "admin-token"  # the proxy must drop it, never pass it on


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


def test_parse_target() -> None:
    t = parse_target(
        parse("/exec/ns1/p%201/c?command=sh&command=-c&command=echo%20hi&stdin=1&stdout=true&tty=1")
    )
    assert (t.kind, t.namespace, t.pod, t.container) == ("exec", "ns1", "p 1", "c")
    assert t.command == ("sh", "-c", "echo hi")
    assert (t.stdin, t.stdout, t.stderr, t.tty) == (True, True, False, True)
    assert parse_target(parse("/attach/ns/p?container=c&stdout=1")).container == "c"
    assert parse_target(parse("/portforward/ns/p?port=80&port=8080")).ports == (80, 8080)
    assert parse_target(parse("/portforward/ns/p?port=80,81&port=82")).ports == (80, 81, 82)
    for path, code in [
        ("/nope/a/b", 404),
        ("/exec/ns/p/c?stdout=1", 400),  # no command
        ("/exec/ns/p/c?command=ls", 400),  # no stream
        ("/exec/ns/p?command=ls&stdout=1", 404),  # no container
        ("/portforward/ns/p?port=0", 400),
        ("/portforward/ns/p?port=x", 400),
        ("/portforward/ns/p?port=80,", 400),
    ]:
        with pytest.raises(RequestError) as err:
            parse_target(parse(path))
        assert err.value.code == code, path
