"""A session's last message goes out with the close frame, in one write.

kube-apiserver closes an exec's WebSocket right after the status; a client
that returns on the status (lightkube) and then closes its socket must find
the close frame in the same read, or its still-pending read (httpx-ws' sync
session reads on a thread) ends up reading the next connection that reuses
the file descriptor.
"""

from __future__ import annotations

import io
import socket
from typing import cast

import pytest

from machinery.streaming import websocket
from machinery.streaming.transport import StreamError


class Writes:
    """The write side of a socket: what each sendall carried."""

    def __init__(self) -> None:
        self.calls: list[bytes] = []

    def sendall(self, data: bytes) -> None:
        self.calls.append(bytes(data))


def frames(data: bytes) -> list[websocket.WsFrame]:
    reader = io.BytesIO(data)
    out = []
    while reader.tell() < len(data):
        out.append(websocket.read_frame(reader, expect_masked=False))
    return out


def server_conn() -> tuple[Writes, websocket.ChannelConnection]:
    writes = Writes()
    ws = websocket.WebSocket(io.BytesIO(), cast(socket.socket, writes), client=False)
    return writes, websocket.ChannelConnection(ws, (websocket.STDIN,), v5=True)


def test_status_and_close_frame_in_one_write() -> None:
    writes, conn = server_conn()
    websocket.ChannelSink(conn, websocket.STDOUT).write(b"out")
    websocket.ChannelSink(conn, websocket.ERROR, last=True).write(b'{"status":"Success"}')
    assert len(writes.calls) == 2
    out, last = frames(writes.calls[0]), frames(writes.calls[1])
    assert out == [websocket.WsFrame(True, websocket.OP_BINARY, b"\x01out")]
    assert last == [
        websocket.WsFrame(True, websocket.OP_BINARY, b'\x03{"status":"Success"}'),
        websocket.WsFrame(True, websocket.OP_CLOSE, b"\x03\xe8"),  # 1000, normal closure
    ]


def test_nothing_is_written_after_the_close_frame() -> None:
    writes, conn = server_conn()
    conn.write_last(websocket.ERROR, b"{}")
    conn.ws.send_close()  # the handler's own close afterwards sends nothing more
    with pytest.raises(StreamError):
        conn.write(websocket.STDOUT, b"late")
    with pytest.raises(StreamError):
        conn.write_last(websocket.ERROR, b"again")
    assert len(writes.calls) == 1


def test_last_after_close_is_refused() -> None:
    writes, conn = server_conn()
    conn.ws.send_close()
    with pytest.raises(StreamError):
        conn.write_last(websocket.ERROR, b"{}")
    assert [f.opcode for f in frames(b"".join(writes.calls))] == [websocket.OP_CLOSE]
