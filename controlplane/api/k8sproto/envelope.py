"""Kubernetes' protobuf framing: the `k8s\\x00` envelope, lists, watch frames.

A protobuf document (`application/vnd.kubernetes.protobuf`) is the magic
`k8s\\x00` then a `runtime.Unknown` (typeMeta = 1 {apiVersion = 1, kind = 2},
raw = 2, contentEncoding = 3, contentType = 4) whose `raw` is the object's
own message (which has no apiVersion or kind of its own). A watch stream
(`;stream=watch`) is a run of frames, each a 4-byte big-endian length and
a bare `meta/v1.WatchEvent` {type = 1, object = 2 RawExtension} whose raw
is the object as a whole document, envelope included, as kube-apiserver's
raw stream serializer writes them.

`decode` refuses, with ProtobufError naming the problem, a body without the
magic, an envelope that names no kind Kubernetes has protobuf for, and a
content encoding; `encode` writes any object whose apiVersion and kind have
a message, and raises Unsupported for the rest (custom resources).
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import Any

from controlplane.api.k8sproto import codec, compiled, schema
from controlplane.api.k8sproto.codec import MAGIC, ProtobufError

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
WATCH_MEDIA_TYPE = "application/vnd.kubernetes.protobuf;stream=watch"
MAX_FRAME = 16 * 1024 * 1024


Unsupported = codec.Unsupported
unwrap = codec.unwrap
message_of = codec.message_of


def decode(data: bytes, depth: int = 0) -> dict[str, Any]:
    """The object of a protobuf document, with its apiVersion and kind, read
    by its message's compiled decoder (compiled.py); its large sub-objects
    but the metadata come from reused.py when their bytes were seen before."""
    api_version, kind, raw = codec.unwrap(data)
    decoder = _decoders.get((api_version, kind))
    if decoder is None:
        decoder = compiled.decoder(codec.message_of(api_version, kind), top=True)
        _decoders[(api_version, kind)] = decoder
    obj = decoder(raw, 0, len(raw), depth)
    return {"apiVersion": api_version, "kind": kind, **obj}


_decoders: dict[tuple[str, str], compiled.Decoder] = {}  # by apiVersion and kind


@lru_cache(maxsize=512)
def head(api_version: str, kind: str) -> bytes:
    """The magic and the typeMeta field of every document of this kind."""
    meta = bytearray()
    codec.put_bytes(meta, b"\n", api_version.encode())
    codec.put_bytes(meta, b"\x12", kind.encode())
    out = bytearray(MAGIC)
    codec.put_bytes(out, b"\n", meta)
    return bytes(out)


def _varint(value: int) -> bytes:
    out = bytearray()
    codec.put_varint(out, value)
    return bytes(out)


def wrap(api_version: str, kind: str, raw: bytes | bytearray) -> bytes:
    """The whole document: magic, Unknown{typeMeta, raw, "", ""} (contentEncoding
    and contentType empty, as Go writes them)."""
    return b"".join((head(api_version, kind), b"\x12", _varint(len(raw)), raw,
                     b"\x1a\x00\x22\x00"))  # fmt: skip


def encode(obj: dict[str, Any], api_version: str = "", kind: str = "") -> bytes:
    """An object (with its apiVersion and kind, or the ones given) as a document."""
    api_version = api_version or str(obj.get("apiVersion") or "")
    kind = kind or str(obj.get("kind") or "")
    return wrap(api_version, kind, codec.encode(obj, message_of(api_version, kind)))


def supported(api_version: str, kind: str) -> bool:
    return schema.kind_message(api_version, kind) is not None


def encode_list(
    api_version: str, kind: str, items: list[dict[str, Any]], list_meta: dict[str, Any]
) -> bytes:
    """`<kind>List` {metadata = 1 ListMeta, items = 2} of decoded objects."""
    list_message = message_of(api_version, f"{kind}List")
    item_message = message_of(api_version, kind)
    out = bytearray()
    meta_field = list_message.by_name["metadata"]
    assert meta_field.message is not None
    codec.put_bytes(out, meta_field.tag, codec.encode(list_meta, meta_field.message))
    tag = list_message.by_name["items"].tag
    for item in items:
        codec.put_bytes(out, tag, codec.encode(item, item_message))
    return wrap(api_version, f"{kind}List", out)


def status(doc: dict[str, Any]) -> bytes:
    """A metav1.Status (errors, and a delete's success) as kube-apiserver writes it."""
    return wrap("v1", "Status", codec.encode(doc, schema.message("meta/v1.Status")))


def watch_frame(event_type: str, document: bytes) -> bytes:
    """One length-prefixed WatchEvent frame around a whole object document."""
    raw = bytearray()
    codec.put_bytes(raw, b"\n", document)
    event = bytearray()
    codec.put_bytes(event, b"\n", event_type.encode())
    codec.put_bytes(event, b"\x12", raw)
    return struct.pack(">I", len(event)) + bytes(event)


def read_frames(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """The (type, object) of each whole frame of a watch stream (for clients
    and tests); a frame longer than MAX_FRAME or cut short is refused."""
    events = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < 4:
            raise ProtobufError("a watch frame's length is cut short")
        (size,) = struct.unpack_from(">I", data, pos)
        if size > MAX_FRAME or size > len(data) - pos - 4:
            raise ProtobufError(f"a watch frame of {size} bytes is past the end of the stream")
        pos += 4
        event = codec.fields_of(data, pos, pos + size)
        pos += size
        type_span, object_span = event.get(1), event.get(2)
        if not isinstance(type_span, tuple) or not isinstance(object_span, tuple):
            raise ProtobufError("a WatchEvent without type or object")
        raw = codec.fields_of(data, *object_span).get(1)
        if not isinstance(raw, tuple):
            raise ProtobufError("a WatchEvent whose object is empty")
        document = data[raw[0] : raw[1]]
        events.append((data[type_span[0] : type_span[1]].decode(), decode(document)))
    return events


__all__ = ["MAGIC", "ProtobufError", "Unsupported"]
