"""Exec and attach over WebSocket with the v5 and v4 channel protocols."""

from __future__ import annotations

import io
import json

from machinery.streaming import websocket
from proto.runtime.v1 import api_pb2
from runtime.streaming import StreamingServer
from tests.fakes.streaming_backend import HostProcessBackend
from tests.harness.streaming_clients import WsClient

STDOUT, STDERR, ERROR = websocket.STDOUT, websocket.STDERR, websocket.ERROR


def exec_url(server: StreamingServer, cmd: list[str], **kw: bool) -> str:
    kw.setdefault("stdout", True)
    kw.setdefault("stderr", not kw.get("tty", False))
    return server.get_exec(api_pb2.ExecRequest(container_id="c1", cmd=cmd, **kw))


def test_v5_is_preferred_and_streams_are_separate(server: StreamingServer) -> None:
    client = WsClient(exec_url(server, ["sh", "-c", "printf out; printf err >&2; exit 5"]))
    assert client.reply.status == 101 and client.protocol == "v5.channel.k8s.io"
    out = client.collect()
    assert out[STDOUT] == b"out" and out[STDERR] == b"err"
    status = json.loads(out[ERROR])
    assert status["reason"] == "NonZeroExitCode"
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "5"}]


def test_v4_success_status(server: StreamingServer) -> None:
    client = WsClient(exec_url(server, ["echo", "hi"]), ("v4.channel.k8s.io",))
    assert client.protocol == "v4.channel.k8s.io"
    out = client.collect()
    assert out[STDOUT] == b"hi\n"
    assert json.loads(out[ERROR]) == {"metadata": {}, "status": "Success"}


def test_v5_stdin_and_close_signal(server: StreamingServer) -> None:
    client = WsClient(exec_url(server, ["cat"], stdin=True))
    client.send(websocket.STDIN, b"hello ")
    client.send(websocket.STDIN, b"world")
    client.close_stdin()
    out = client.collect()
    assert out[STDOUT] == b"hello world"
    assert json.loads(out[ERROR])["status"] == "Success"


def test_tty_resize(server: StreamingServer) -> None:
    client = WsClient(exec_url(server, ["sh", "-c", "read x; stty size"], stdin=True, tty=True))
    client.resize(77, 33)
    client.send(websocket.STDIN, b"go\n")
    out = client.collect()
    assert b"33 77" in out[STDOUT]
    assert STDERR not in out


def test_error_before_start(server: StreamingServer, backend: HostProcessBackend) -> None:
    backend.stopped.add("c1")
    out = WsClient(exec_url(server, ["true"])).collect()
    status = json.loads(out[ERROR])
    assert status["status"] == "Failure" and "not running" in status["message"]


def test_unsupported_subprotocol_is_refused(server: StreamingServer) -> None:
    client = WsClient(exec_url(server, ["true"]), ("base64.channel.k8s.io",))
    assert client.reply.status == 403


def test_attach_over_websocket(server: StreamingServer, backend: HostProcessBackend) -> None:
    backend.add_container("sh1", ["sh"], stdin=True)
    url = server.get_attach(
        api_pb2.AttachRequest(container_id="sh1", stdin=True, stdout=True, stderr=True)
    )
    client = WsClient(url)
    outputs: dict[int, bytearray] = {}
    client.send(websocket.STDIN, b"echo -n hello\n")
    client.read_until(STDOUT, b"hello", outputs)
    client.send(websocket.STDIN, b"echo bye >&2; exit 0\n")
    client.close_stdin()
    out = client.collect(outputs)
    assert out[STDOUT] == b"hello"
    assert out[STDERR] == b"bye\n"
    assert json.loads(out[ERROR])["status"] == "Success"


def test_status_arrives_with_the_close_frame(server: StreamingServer) -> None:
    """The read that completes the status also brings the close frame, as
    from kube-apiserver (which closes right after the status): a client that
    returns on the status and closes its socket (lightkube) leaves no read
    pending on it (tests/unit/machinery/streaming/test_websocket_last.py)."""
    client = WsClient(exec_url(server, ["echo", "hi"]))
    assert isinstance(client.rfile, io.BufferedReader)
    received = b""
    try:
        while True:
            chunk = client.rfile.read1(1 << 16)  # what one recv brought, at most
            assert chunk, f"closed before the status: {received!r}"
            received += chunk
            reader = io.BytesIO(received)
            frames = []
            try:
                while reader.tell() < len(received):
                    frames.append(websocket.read_frame(reader, expect_masked=False))
            except EOFError:
                pass
            if any(f.opcode == websocket.OP_BINARY and f.payload[:1] == b"\x03" for f in frames):
                break
    finally:
        client.close()
    assert frames[-1].opcode == websocket.OP_CLOSE, frames
    assert json.loads(frames[-2].payload[1:])["status"] == "Success"


def test_the_stream_ends_with_the_close_frame(server: StreamingServer) -> None:
    """As kubelet (wsstream's Conn.Close): the close frame, then the end of
    the stream at once, without waiting for the client's close frame (the
    server's linger here is 2 s), after every byte of output."""
    lines = 100_000
    client = WsClient(exec_url(server, ["seq", str(lines)]))
    frames, ended = client.frames_unanswered(timeout=1.0)
    assert ended, "the stream did not end within 1 s of the close frame"
    stdout = b"".join(f.payload[1:] for f in frames if f.payload[:1] == bytes([STDOUT]))
    assert stdout == b"".join(b"%d\n" % i for i in range(1, lines + 1))
    assert json.loads(frames[-2].payload[1:])["status"] == "Success"
