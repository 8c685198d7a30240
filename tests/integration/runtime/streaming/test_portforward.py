"""Port-forward over SPDY to TCP servers on 127.0.0.1 (the test backend dials the host)."""

from __future__ import annotations

import socket
import threading

from proto.runtime.v1 import api_pb2
from runtime.streaming import StreamingConfig, StreamingServer
from tests.fakes.streaming_backend import HostProcessBackend
from tests.harness.streaming_clients import PortForwardClient, read_to_eof
from tests.harness.wait import wait_for


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pf_url(server: StreamingServer) -> str:
    return server.get_port_forward(api_pb2.PortForwardRequest(pod_sandbox_id="sb1"))


def test_one_connection_round_trip(server: StreamingServer, echo_port: int) -> None:
    client = PortForwardClient(pf_url(server))
    error, data = client.connect(echo_port)
    data.write(b"ping")
    data.close()
    assert read_to_eof(data) == b"ping"
    assert read_to_eof(error) == b""
    client.close()


def test_many_connections_on_one_session(server: StreamingServer, echo_port: int) -> None:
    client = PortForwardClient(pf_url(server))
    pairs = [client.connect(echo_port) for _ in range(5)]
    payloads = [bytes([65 + i]) * (100000 * (i + 1)) for i in range(5)]
    # interleave: all connections are open at once
    for (_, data), payload in zip(pairs, payloads, strict=True):
        data.write(payload[:1000])
    results: list[bytes] = [b""] * 5

    def drain(i: int) -> None:
        results[i] = read_to_eof(pairs[i][1])

    def finish(i: int) -> None:
        _, data = pairs[i]
        data.write(payloads[i][1000:])
        data.close()

    # read while writing, as a real client does: the echo cannot buffer 1.5 MB
    threads = [threading.Thread(target=f, args=(i,)) for i in range(5) for f in (drain, finish)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == payloads
    client.close()


def test_http_through_the_tunnel(server: StreamingServer) -> None:
    """What critest does: fetch a page through the forwarded port."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(4096)
            body = b"<html>skiff</html>"
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        client = PortForwardClient(pf_url(server))
        _, data = client.connect(listener.getsockname()[1])
        data.write(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        response = read_to_eof(data)
        assert response.startswith(b"HTTP/1.0 200 OK") and response.endswith(b"<html>skiff</html>")
        client.close()
    finally:
        thread.join()
        listener.close()


def test_dial_failure_is_written_on_the_error_stream(server: StreamingServer) -> None:
    client = PortForwardClient(pf_url(server))
    port = closed_port()
    error, data = client.connect(port)
    message = read_to_eof(error)
    assert message.startswith(f"error forwarding port {port} to pod sb1".encode())
    assert read_to_eof(data) == b""
    client.close()


def test_stream_without_port_is_reset(server: StreamingServer, echo_port: int) -> None:
    client = PortForwardClient(pf_url(server))
    stream = client.client.open(streamType="data", requestID="x")
    assert read_to_eof(stream) == b""
    # the session is still usable
    _, data = client.connect(echo_port)
    data.write(b"ok")
    data.close()
    assert read_to_eof(data) == b"ok"
    client.close()


def test_half_a_pair_is_reset_after_the_creation_timeout(
    backend: HostProcessBackend, echo_port: int
) -> None:
    with StreamingServer(backend, StreamingConfig(stream_creation_timeout=0.3)) as server:
        client = PortForwardClient(pf_url(server))
        lone = client.client.open(streamType="data", port=str(echo_port), requestID="lonely")
        assert read_to_eof(lone) == b""
        wait_for(lambda: lone.reset, message="RST_STREAM for the lone half")
        _, data = client.connect(echo_port)  # the session itself goes on
        data.write(b"still here")
        data.close()
        assert read_to_eof(data) == b"still here"
        client.close()
