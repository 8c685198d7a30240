"""Fuzz target: Kubernetes' protobuf bodies (issue 28, Bad input).

Inputs are the encodings of every kind's example object, damaged: cut
short, bytes flipped or inserted, lengths replaced by lies (up to 2^63),
the magic changed, fields repeated thousands of times, RawExtensions
nested deep; and plain random bytes after the magic. Each is refused with
ProtobufError (a clear error naming the problem) by both the compiled
decoders and the table-walking reader, or decoded by both into the same
JSON-shaped object, which protobuf's C runtime, the Python writer and the
stored answers' writer (stored.py, parts cached or not) all encode back
into bytes that decode to it again.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from controlplane.api.k8sproto import codec, envelope, stored
from controlplane.api.k8sproto.codec import ProtobufError
from tests.fakes.k8sproto_examples import EXAMPLES

_DOCS = [envelope.encode(obj) for obj in EXAMPLES]


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _damage(doc: bytes, how: str, at: int, value: int) -> bytes:
    at = at % (len(doc) + 1)
    if how == "cut":
        return doc[:at]
    if how == "flip":
        return doc[:at] + bytes([value & 0xFF]) + doc[at + 1 :]
    if how == "insert":
        return doc[:at] + bytes([value & 0xFF]) + doc[at:]
    if how == "lie":  # a length-delimited key, then a lying length
        return doc[:at] + b"\x12" + _varint(value) + doc[at:]
    if how == "magic":
        return bytes([value & 0xFF]) + doc[1:]
    if how == "repeat":  # one field thousands of times (a huge repeated field)
        field = b"\x0a\x01a"
        return envelope.wrap("v1", "Pod", b"\x0a\x00" + b"\x7a" + _varint(3 * 5000)
                             + field * 5000)  # fmt: skip
    nested = envelope.wrap("v1", "List", b"")
    for _ in range(value % 300):
        raw = b"\x0a" + _varint(len(nested)) + nested
        nested = envelope.wrap("v1", "List", b"\x12" + _varint(len(raw)) + raw)
    return nested


protobuf_inputs = st.one_of(
    st.builds(
        _damage,
        st.sampled_from(_DOCS),
        st.sampled_from(["cut", "flip", "insert", "lie", "magic", "repeat", "nest"]),
        st.integers(min_value=0, max_value=1 << 16),
        st.one_of(st.integers(min_value=0, max_value=255),
                  st.integers(min_value=0, max_value=(1 << 63) - 1)),
    ),
    st.binary(max_size=200).map(lambda b: b"k8s\x00" + b),
    st.sampled_from(_DOCS),
)  # fmt: skip


def check_protobuf(data: bytes) -> str:
    try:
        obj: Any = envelope.decode(data)  # the compiled decoders (compiled.py)
    except ProtobufError:
        try:
            codec.decode_document(data)
        except ProtobufError:
            return "rejected"
        raise AssertionError("the compiled decoder refused what the reader takes") from None
    assert codec.decode_document(data) == obj  # the table-walking reader agrees
    json.dumps(obj)  # JSON-shaped
    api_version, kind = obj["apiVersion"], obj["kind"]
    written_in_c = envelope.encode(obj)  # protobuf's C runtime (fast.py) where it takes it
    written_here = envelope.wrap(api_version, kind,
                                 codec.encode_here(obj, codec.message_of(api_version, kind)))  # fmt: skip
    assert envelope.decode(written_in_c) == obj == envelope.decode(written_here)
    message = codec.message_of(api_version, kind)
    for _ in range(2):  # first written, then from the cached parts (stored.py)
        written_stored = envelope.wrap(api_version, kind, stored.encode(obj, message))
        assert envelope.decode(written_stored) == obj
    return "ok"
