"""SpdySession on a socketpair: stream lifecycle, pings, resets, flow control."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from typing import BinaryIO

import pytest

from machinery.streaming import spdy, spdy_frames, transport
from tests.harness.wait import wait_for


@pytest.fixture
def pair() -> Iterator[tuple[spdy.SpdySession, spdy.SpdySession]]:
    a, b = socket.socketpair()
    ra, rb = a.makefile("rb"), b.makefile("rb")
    server = spdy.SpdySession(ra, a, client=False)
    client = spdy.SpdySession(rb, b, client=True)
    server.start()
    client.start()
    try:
        yield server, client
    finally:
        client.close()
        server.close()
        ra.close()
        rb.close()


def test_streams_carry_data_both_ways_and_half_close(
    pair: tuple[spdy.SpdySession, spdy.SpdySession],
) -> None:
    server, client = pair
    cs = client.open_stream({"streamtype": ["stdin"]})
    ss = server.accept_stream(timeout=5)
    assert (
        ss is not None and ss.header("streamType") == "stdin" and ss.stream_id == cs.stream_id == 1
    )
    cs.write(b"to server")
    cs.close()
    assert ss.read() == b"to server" and ss.read() == b""
    ss.write(b"to client")  # the other direction is still open
    ss.close()
    assert cs.read() == b"to client" and cs.read() == b""


def test_reset_ends_both_directions(pair: tuple[spdy.SpdySession, spdy.SpdySession]) -> None:
    server, client = pair
    cs = client.open_stream({"streamtype": ["data"]})
    ss = server.accept_stream(timeout=5)
    assert ss is not None
    ss.cancel()
    assert cs.read(timeout=5) == b""
    wait_for(lambda: cs.reset, message="client saw RST_STREAM")
    with pytest.raises(transport.StreamError):
        cs.write(b"x")


def test_transport_loss_wakes_readers_and_accept(
    pair: tuple[spdy.SpdySession, spdy.SpdySession],
) -> None:
    server, client = pair
    cs = client.open_stream({"streamtype": ["stdout"]})
    ss = server.accept_stream(timeout=5)
    assert ss is not None
    gone = threading.Event()
    server.on_close(gone.set)
    client.close()
    assert ss.read(timeout=5) == b""
    assert server.accept_stream(timeout=5) is None
    assert gone.wait(5)
    with pytest.raises(transport.StreamError):
        cs.write(b"late")


def raw_pair() -> tuple[socket.socket, spdy.SpdySession, spdy_frames.Framer, BinaryIO]:
    a, b = socket.socketpair()
    ra = a.makefile("rb")
    server = spdy.SpdySession(ra, a, client=False)
    server.start()
    return b, server, spdy_frames.Framer(), ra


def read_frame(sock: socket.socket, framer: spdy_frames.Framer) -> spdy_frames.Frame:
    def exact(n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            assert chunk
            out += chunk
        return out

    head = exact(8)
    (length,) = struct.unpack(">I", head[4:])
    return framer.decode(head, exact(length & 0xFFFFFF))


def test_pings_from_the_peer_are_echoed_and_bad_stream_ids_refused() -> None:
    sock, server, framer, ra = raw_pair()
    reader = spdy_frames.Framer()
    try:
        sock.sendall(framer.encode(spdy_frames.Ping(7)))
        assert read_frame(sock, reader) == spdy_frames.Ping(7)
        sock.sendall(
            framer.encode(spdy_frames.SynStream(2, {"streamtype": ["x"]}))
        )  # even: server's ids
        assert read_frame(sock, reader) == spdy_frames.RstStream(2, spdy.PROTOCOL_ERROR)
        sock.sendall(framer.encode(spdy_frames.SynStream(3, {"streamtype": ["x"]})))
        assert read_frame(sock, reader) == spdy_frames.SynReply(3, {})
        sock.sendall(
            framer.encode(spdy_frames.SynStream(1, {"streamtype": ["x"]}))
        )  # not increasing
        assert read_frame(sock, reader) == spdy_frames.RstStream(1, spdy.PROTOCOL_ERROR)
    finally:
        sock.close()
        server.close()
        ra.close()


def test_flow_control_windows_are_honoured_once_the_peer_uses_them() -> None:
    sock, server, framer, ra = raw_pair()
    reader = spdy_frames.Framer()
    try:
        sock.sendall(
            framer.encode(
                spdy_frames.Settings([(0, spdy_frames.SETTINGS_INITIAL_WINDOW_SIZE, 1000)])
            )
        )
        sock.sendall(framer.encode(spdy_frames.SynStream(1, {"streamtype": ["stdout"]})))
        assert read_frame(sock, reader) == spdy_frames.SynReply(1, {})
        stream = server.accept_stream(timeout=5)
        assert stream is not None
        done = threading.Event()

        def write() -> None:
            stream.write(b"y" * 2500)
            done.set()

        writer = threading.Thread(target=write)
        writer.start()
        got = read_frame(sock, reader)
        assert got == spdy_frames.DataFrame(1, b"y" * 1000)
        assert stream.send_window == 0
        assert writer.is_alive() and not done.is_set(), "wrote past the peer's window"
        sock.sendall(framer.encode(spdy_frames.WindowUpdate(1, 5000)))
        second = read_frame(sock, reader)
        assert second == spdy_frames.DataFrame(1, b"y" * 1500)
        writer.join()
    finally:
        sock.close()
        server.close()
        ra.close()


def test_received_data_is_acknowledged_per_stream_and_per_session() -> None:
    sock, server, framer, ra = raw_pair()
    reader = spdy_frames.Framer()
    try:
        sock.sendall(framer.encode(spdy_frames.SynStream(1, {"streamtype": ["stdin"]})))
        assert read_frame(sock, reader) == spdy_frames.SynReply(1, {})
        stream = server.accept_stream(timeout=5)
        assert stream is not None
        sock.sendall(framer.encode(spdy_frames.DataFrame(1, b"z" * 40000)))
        assert stream.read(65536, timeout=5) == b"z" * 40000
        updates = {read_frame(sock, reader), read_frame(sock, reader)}
        assert updates == {spdy_frames.WindowUpdate(0, 40000), spdy_frames.WindowUpdate(1, 40000)}
    finally:
        sock.close()
        server.close()
        ra.close()
