"""Port-forward over WebSocket (kubelet's channel protocol) to TCP servers on
127.0.0.1 (the test backend dials the host): what the Python client and kr8s
speak. Each port has a data and an error channel, both opened with the port
number; kr8s names no subprotocol, the Python client v4.channel.k8s.io."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from proto.runtime.v1 import api_pb2
from runtime.streaming import StreamingServer
from tests.harness.streaming_clients import WsClient
from tests.integration.runtime.streaming.test_portforward import closed_port


def pf_url(server: StreamingServer, *ports: int) -> str:
    req = api_pb2.PortForwardRequest(pod_sandbox_id="sb1", port=list(ports))
    return server.get_port_forward(req)


def port_bytes(port: int) -> bytes:
    return struct.pack("<H", port)


@pytest.fixture
def http_port() -> Iterator[int]:
    """Answers one HTTP request with a page and closes, as busybox httpd does."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(4096)
            body = b"<h1>Welcome</h1>"
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
        thread.join(5)


def test_v4_echo_round_trip_with_the_port_first(server: StreamingServer, echo_port: int) -> None:
    client = WsClient(pf_url(server, echo_port), ("v4.channel.k8s.io",))
    assert client.reply.status == 101 and client.protocol == "v4.channel.k8s.io"
    outputs: dict[int, bytearray] = {}
    client.read_until(0, port_bytes(echo_port), outputs)
    client.read_until(1, port_bytes(echo_port), outputs)
    client.send(0, b"ping")
    client.read_until(0, port_bytes(echo_port) + b"ping", outputs)
    client.close()


def test_no_subprotocol_fetches_a_page_and_closes(server: StreamingServer, http_port: int) -> None:
    """kr8s' way: no Sec-WebSocket-Protocol either way; the server closes
    the WebSocket once the pod's side of the connection ended."""
    client = WsClient(pf_url(server, http_port), ())
    assert client.reply.status == 101
    assert "sec-websocket-protocol" not in client.reply.headers
    client.send(0, b"GET / HTTP/1.0\r\n\r\n")
    out = client.collect()
    assert out[0].startswith(port_bytes(http_port) + b"HTTP/1.0 200 OK")
    assert out[0].endswith(b"<h1>Welcome</h1>")
    assert out[1] == port_bytes(http_port)


def test_two_ports_on_their_own_channels(server: StreamingServer, echo_port: int) -> None:
    dead = closed_port()
    client = WsClient(pf_url(server, dead, echo_port), ("v4.channel.k8s.io",))
    outputs: dict[int, bytearray] = {}
    client.read_until(1, port_bytes(dead) + b"error forwarding port", outputs)
    client.send(2, b"second")
    client.read_until(2, port_bytes(echo_port) + b"second", outputs)
    assert bytes(outputs[0]) == port_bytes(dead)  # nothing on the dead port's data
    client.close()


def test_dial_failure_is_written_on_the_error_channel(server: StreamingServer) -> None:
    port = closed_port()
    out = WsClient(pf_url(server, port), ()).collect()
    assert out[0] == port_bytes(port)
    assert out[1].startswith(port_bytes(port) + f"error forwarding port {port}".encode())


def test_base64_only_is_refused(server: StreamingServer, echo_port: int) -> None:
    client = WsClient(pf_url(server, echo_port), ("v4.base64.channel.k8s.io",))
    assert client.reply.status == 403
    assert client.ws is None


def test_a_websocket_without_ports_is_refused(server: StreamingServer) -> None:
    client = WsClient(pf_url(server), ())
    assert client.reply.status == 400
    assert client.ws is None


def test_the_stream_ends_with_the_close_frame(server: StreamingServer, http_port: int) -> None:
    """Once the pod's side ended: the page, the close frame and the end of
    the stream at once, for a client that never answers the close frame
    (the server's linger here is 2 s), as kubelet closes."""
    client = WsClient(pf_url(server, http_port), ("v4.channel.k8s.io",))
    client.send(0, b"GET / HTTP/1.0\r\n\r\n")
    frames, ended = client.frames_unanswered(timeout=1.0)
    assert ended, "the stream did not end within 1 s of the close frame"
    page = b"".join(f.payload[1:] for f in frames if f.payload[:1] == b"\x00")
    assert page.startswith(port_bytes(http_port) + b"HTTP/1.0 200 OK")
    assert page.endswith(b"<h1>Welcome</h1>")
