"""Hostile HTTP at the agent's stream proxy: request heads are read strictly
(machinery/streaming/upgrade.py, which the runtime's streaming server shares).

On the old code a request without `HTTP/1.x` got an HTTP/0.9 answer (no
status line), folded header lines were passed on to the runtime, and a
body declared by Content-Length or Transfer-Encoding (smuggling's carrier)
was relayed to the runtime's streaming server after the upgrade request.
Each refusal here has a status line, and nothing reaches the runtime.
"""

from __future__ import annotations

import socket

import pytest

from runtime.streaming import StreamingConfig, StreamingServer
from tests.fakes.streaming_backend import HostProcessBackend
from tests.unit.agent.test_stream_proxy import Stack, read_all, stack  # noqa: F401

EXEC = "POST /exec/default/web/app?command=ls&stdout=1"
UPGRADE = "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"


def send(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        try:
            return read_all(sock)
        except ConnectionResetError:  # refused before it read all we sent
            return b""


HOSTILE = {
    "no version (HTTP/0.9)": (f"{EXEC}\r\n\r\n", 400),
    "HTTP/2.0 on the line": (f"{EXEC} HTTP/2.0\r\n\r\n", 505),
    "HTTP/0.9 named": (f"{EXEC} HTTP/0.9\r\n\r\n", 505),
    "extra word": (f"{EXEC} HTTP/1.1 x\r\n\r\n", 400),
    "lowercase version": (f"{EXEC} http/1.1\r\n\r\n", 400),
    "two spaces": ("POST  /exec/default/web/app HTTP/1.1\r\n\r\n", 400),
    "bare LF line end": (f"{EXEC} HTTP/1.1\r\n{UPGRADE}X-A: 1\nX-B: 2\r\n\r\n", 400),
    "bare CR in a value": (f"{EXEC} HTTP/1.1\r\n{UPGRADE}X-A: a\rInjected: 1\r\n\r\n", 400),
    "obs-fold": (f"{EXEC} HTTP/1.1\r\n{UPGRADE}X-A: a\r\n folded\r\n\r\n", 400),
    "space before colon": (f"{EXEC} HTTP/1.1\r\n{UPGRADE}X-A : a\r\n\r\n", 400),
    "two Content-Lengths": (
        f"{EXEC} HTTP/1.1\r\n{UPGRADE}Content-Length: 0\r\nContent-Length: 44\r\n\r\n", 400),
    "Transfer-Encoding and Content-Length": (
        f"{EXEC} HTTP/1.1\r\n{UPGRADE}Content-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n"
        "0\r\n\r\n", 400),
    "a body": (f"{EXEC} HTTP/1.1\r\n{UPGRADE}Content-Length: 4\r\n\r\nbody", 400),
    "two Hosts": (f"{EXEC} HTTP/1.1\r\n{UPGRADE}Host: a\r\nHost: b\r\n\r\n", 400),
    "oversize head": (f"{EXEC} HTTP/1.1\r\n" + "".join(
        f"X-{i}: {'a' * 1000}\r\n" for i in range(40)) + "\r\n", 431),
    "too many fields": (f"{EXEC} HTTP/1.1\r\n" + "".join(
        f"X-{i}: a\r\n" for i in range(150)) + "\r\n", 431),
}  # fmt: skip


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_heads_are_refused_with_a_status_line(stack: Stack, case: str) -> None:  # noqa: F811
    data, code = HOSTILE[case]
    answer = send(stack.proxy.port, data.encode("latin-1"))
    assert answer.startswith(f"HTTP/1.1 {code} ".encode()), answer[:200]
    assert stack.upstream.heads == []  # nothing reached the runtime


def test_a_clean_upgrade_still_passes(stack: Stack) -> None:  # noqa: F811
    head = f"{EXEC} HTTP/1.1\r\nHost: x\r\n{UPGRADE}Content-Length: 0\r\n\r\n"
    assert send(stack.proxy.port, head.encode()).startswith(b"HTTP/1.1 101 ")
    assert len(stack.upstream.heads) == 1


def test_the_runtime_streaming_server_reads_heads_alike() -> None:
    backend = HostProcessBackend(env={"PATH": "/usr/bin:/bin", "LANG": "C"})
    try:
        with StreamingServer(backend, StreamingConfig(port=0)) as server:
            for case in ("no version (HTTP/0.9)", "obs-fold", "a body"):
                data, code = HOSTILE[case]
                answer = send(server.port, data.replace(EXEC, "POST /exec/x").encode())
                assert answer.startswith(f"HTTP/1.1 {code} ".encode()), (case, answer[:200])
    finally:
        backend.close()
