"""skiffctl port-forward against the runtime's streaming server through the agent's proxy.

The host-process backend dials 127.0.0.1 in the test's own network
namespace, so the pod's port is a small HTTP server of the test's; the
stack is test_exec.py's. `Forwarding` (listeners + accept loop) runs in a
thread and is stopped through its own `stop()`, never by a signal.
"""

from __future__ import annotations

import http.server
import socket
import threading
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from controlplane.cli.context import CliError
from controlplane.cli.port_forward import Forwarding, PortSpec, parse_ports
from controlplane.cli.streamclient import port_forward_path, upgrade
from controlplane.client.config import ClientConfig
from machinery.streaming.portforward import PROTOCOL
from tests.harness.wait import wait_for
from tests.unit.controlplane.cli.test_exec import TOKEN, Stack, stack

__all__ = ["stack"]


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"hello from {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def web() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_parse_ports() -> None:
    assert parse_ports(["8080:80", "443", ":53"]) == [
        PortSpec(8080, 80),
        PortSpec(443, 443),
        PortSpec(0, 53),
    ]
    for bad in ("x", "80:", "1:70000", "-1:80"):
        with pytest.raises(CliError):
            parse_ports([bad])


def start(stack: Stack, specs: list[PortSpec]) -> tuple[Forwarding, list[str], threading.Thread]:
    path = port_forward_path("default", "web", [s.remote for s in specs])
    server = stack.ctl.client.config.server  # type: ignore[attr-defined]
    conn = upgrade(server, path, TOKEN, (PROTOCOL,))  # through the stand-in API server
    said: list[str] = []
    forwarding = Forwarding(conn, specs, "127.0.0.1", said.append, said.append)
    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(forwarding.serve()), daemon=True)
    thread.start()
    return forwarding, said, thread


def test_forwarding_http_and_dial_failure(stack: Stack, web: int) -> None:
    dead = closed_port()
    forwarding, said, thread = start(stack, [PortSpec(0, web), PortSpec(0, dead)])
    try:
        local, local_dead = forwarding.local_ports
        assert said[:2] == [
            f"Forwarding from 127.0.0.1:{local} -> {web}",
            f"Forwarding from 127.0.0.1:{local_dead} -> {dead}",
        ]

        def get(i: int) -> bytes:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{local}/x{i}", timeout=10) as resp:
                    return bytes(resp.read())
            except OSError as exc:
                return repr(exc).encode()

        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(get, range(6)))
            assert got == [f"hello from /x{i}".encode() for i in range(6)], said
        with socket.create_connection(("127.0.0.1", local_dead), timeout=10) as s:
            assert s.recv(100) == b""  # the pod's port refused: this connection ends
        wait_for(lambda: any("error" in line and str(dead) in line for line in said), timeout=10)
        assert f"Handling connection for {local}" in said
    finally:
        forwarding.stop()
        thread.join(10)
    assert not thread.is_alive()
    req = stack.runtime.calls[-1]
    assert list(req.port) == [web, dead]


def test_forwarding_ends_when_the_connection_is_lost(stack: Stack, web: int) -> None:
    forwarding, _, thread = start(stack, [PortSpec(0, web)])
    stack.server.stop()  # the runtime's server goes away: so does the session
    thread.join(10)
    assert not thread.is_alive()
    assert forwarding.forwarder.conn.session.closed.is_set()


def test_port_forward_verb_refusals(stack: Stack) -> None:
    r = stack.ctl("port-forward", "web", "nope")
    assert r.code == 1 and "invalid port specification" in r.err
    server = stack.ctl.client.config.server  # type: ignore[attr-defined]
    stack.ctl.client.config = ClientConfig(server=server, token="bad")  # type: ignore[attr-defined]
    r = stack.ctl("port-forward", "pod/web", "8080:80")
    assert r.code == 1 and "Unauthorized" in r.err
