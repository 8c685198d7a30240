"""Pure pieces of the streaming server: SPDY and WebSocket codecs, status
JSON, resize parsing and the token cache."""

from __future__ import annotations

import hashlib
import io
import json
import struct
import zlib

import pytest

from machinery.streaming import spdy, spdy_frames, websocket
from machinery.streaming.buffer import InboundBuffer
from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.streaming import status
from runtime.streaming.cache import RequestCache
from runtime.streaming.remotecommand import Options, iter_sizes


def test_spdy_dictionary_is_the_spdy3_constant() -> None:
    assert len(spdy_frames.DICTIONARY) == 1423
    assert spdy_frames.DICTIONARY.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert spdy_frames.DICTIONARY.endswith(b",*,enq=0.")
    assert (
        hashlib.sha256(spdy_frames.DICTIONARY).hexdigest()
        == "51d27341373f923f3cd88e1eb7162aeaa3723d7585ff2399201dc06498407f02"
    )


def test_data_frame_layout() -> None:
    raw = spdy_frames.Framer().encode(spdy_frames.DataFrame(5, b"abc", spdy_frames.FLAG_FIN))
    assert raw == struct.pack(">II", 5, (1 << 24) | 3) + b"abc"


def test_control_frame_layout() -> None:
    raw = spdy_frames.Framer().encode(spdy_frames.RstStream(7, spdy.CANCEL))
    assert raw == bytes.fromhex("80030003") + struct.pack(">III", 8, 7, 5)
    raw = spdy_frames.Framer().encode(spdy_frames.WindowUpdate(3, 1000))
    assert raw == bytes.fromhex("80030009") + struct.pack(">III", 8, 3, 1000)


def test_syn_stream_headers_decompress_with_plain_zlib_and_the_dictionary() -> None:
    raw = spdy_frames.Framer().encode(spdy_frames.SynStream(1, {"streamType": ["error"]}))
    first, second, sid, assoc = struct.unpack(">IIII", raw[:16])
    assert first == 0x80030001 and second & 0xFFFFFF == len(raw) - 8 and sid == 1 and assoc == 0
    block = zlib.decompressobj(zdict=spdy_frames.DICTIONARY).decompress(raw[18:])
    assert (
        block
        == struct.pack(">I", 1)
        + struct.pack(">I", 10)
        + b"streamtype"
        + struct.pack(">I", 5)
        + b"error"
    )


def test_frames_round_trip_through_one_compression_context() -> None:
    writer, reader = spdy_frames.Framer(), spdy_frames.Framer()
    frames: list[spdy_frames.Frame] = [
        spdy_frames.SynStream(
            1, {"streamtype": ["stdout"], "x": ["a", "b"]}, spdy_frames.FLAG_FIN, 0, 3
        ),
        spdy_frames.SynReply(1, {}),
        spdy_frames.HeadersFrame(1, {"k": ["v"]}),
        spdy_frames.SynStream(3, {"streamtype": ["stdout"]}),
        spdy_frames.DataFrame(3, b"x" * 70000),
        spdy_frames.Settings([(0, spdy_frames.SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20)]),
        spdy_frames.Ping(2),
        spdy_frames.GoAway(3, 0),
        spdy_frames.WindowUpdate(0, 123),
        spdy_frames.RstStream(3, spdy.CANCEL),
    ]
    for frame in frames:
        raw = writer.encode(frame)
        assert reader.decode(raw[:8], raw[8:]) == frame


def test_bad_header_block_is_a_protocol_error() -> None:
    with pytest.raises(spdy_frames.ProtocolError):
        spdy_frames.decode_header_block(b"\x00\x00\x00\x02\x00")


def test_websocket_accept_key_rfc6455_example() -> None:
    assert websocket.accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


@pytest.mark.parametrize("size", [0, 5, 125, 126, 65535, 65536, 200000])
def test_websocket_frames_round_trip(size: int) -> None:
    payload = bytes(range(256)) * (size // 256) + b"z" * (size % 256)
    for mask in (True, False):
        raw = websocket.encode_frame(websocket.OP_BINARY, payload, mask=mask)
        frame = websocket.read_frame(io.BytesIO(raw), expect_masked=mask)
        assert frame == websocket.WsFrame(True, websocket.OP_BINARY, payload)


def test_websocket_server_refuses_unmasked_client_frames() -> None:
    raw = websocket.encode_frame(websocket.OP_BINARY, b"x", mask=False)
    with pytest.raises(websocket.WebSocketError):
        websocket.read_frame(io.BytesIO(raw), expect_masked=True)


def test_status_json_shapes() -> None:
    assert json.loads(status.for_exit(0)) == {"metadata": {}, "status": "Success"}
    failure = json.loads(status.for_exit(7))
    assert failure["status"] == "Failure" and failure["reason"] == "NonZeroExitCode"
    assert failure["details"]["causes"] == [{"reason": "ExitCode", "message": "7"}]
    nf = json.loads(status.failure(errors.NotFound("container c9 not found")))
    assert (nf["status"], nf["reason"], nf["code"], nf["message"]) == (
        "Failure",
        "NotFound",
        404,
        "container c9 not found",
    )
    internal = json.loads(status.failure(ValueError("boom")))
    assert internal["reason"] == "InternalError" and "boom" in internal["message"]
    assert status.legacy_text(0) == b""
    assert b"exit code" in status.legacy_text(2)


def test_resize_events_from_concatenated_json() -> None:
    buf = InboundBuffer()
    buf.feed(b'{"Width":80,"Height":24}{"Width":1')
    buf.feed(b'00,"Height":30}\n{"Width": 5, "Height": 6}')
    buf.close()
    assert list(iter_sizes(buf)) == [(80, 24), (100, 30), (5, 6)]


def test_expected_streams_per_protocol() -> None:
    opts = Options(stdin=True, stdout=True, stderr=False, tty=True)
    assert opts.expected_streams("v4.channel.k8s.io") == {"error", "stdin", "stdout", "resize"}
    assert opts.expected_streams("v2.channel.k8s.io") == {"error", "stdin", "stdout"}
    plain = Options(stdin=False, stdout=True, stderr=True, tty=False)
    assert plain.expected_streams("v4.channel.k8s.io") == {"error", "stdout", "stderr"}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_cache_tokens_are_single_use_and_expire() -> None:
    clock = FakeClock()
    cache = RequestCache(ttl=60, clock=clock)
    req = api_pb2.ExecRequest(container_id="c1", cmd=["true"], stdout=True)
    token = cache.insert(req)
    req.container_id = "changed"  # the cache keeps its own copy
    got = cache.consume(token)
    assert isinstance(got, api_pb2.ExecRequest) and got.container_id == "c1"
    assert cache.consume(token) is None
    token = cache.insert(req)
    clock.now += 59.9
    assert len(cache) == 1
    clock.now += 0.2
    assert cache.consume(token) is None
    assert len(cache) == 0


def test_cache_limits_in_flight_requests() -> None:
    cache = RequestCache(max_in_flight=2, clock=FakeClock())
    req = api_pb2.PortForwardRequest(pod_sandbox_id="s")
    cache.insert(req)
    cache.insert(req)
    with pytest.raises(errors.ResourceExhausted):
        cache.insert(req)


def test_inbound_buffer_close_keeps_data_abort_drops_it() -> None:
    buf = InboundBuffer()
    buf.feed(b"abc")
    buf.close()
    assert buf.read(2) == b"ab" and buf.read() == b"c" and buf.read() == b""
    buf = InboundBuffer()
    buf.feed(b"abc")
    buf.abort()
    assert buf.read() == b""
    with pytest.raises(TimeoutError):
        InboundBuffer().read(timeout=0)
