"""One converter between Kubernetes' protobuf messages and skiff's dict objects
(its reading half here, its writing half in writer.py).

`decode(data, message)` reads a message's bytes straight into the object as
JSON has it (JSON names, RFC 3339 times, quantities as strings, IntOrString
as int or string, bytes as base64, RawExtension and FieldsV1 as their JSON),
walking the compiled table (schema.py) field by field with no intermediate
message objects; compiled.py makes the same reader into code per message,
which the server uses, and this one is the reference it is held to.

Decoding keeps what JSON would carry: a non-pointer scalar at its zero value
("", 0, false) that Go's JSON omits is what Go writes for "unset", so it is
left out; a pointer field's zero (replicas: 0, a false
automountServiceAccountToken), or one Go's JSON always writes, is kept.
Unknown fields are skipped, as Kubernetes skips them. Every length is
checked against what is left before anything is read or allocated, nesting
is bounded, and a malformed message raises ProtobufError naming the field
and the problem. Documents (the `k8s\\x00` envelope) are unwrapped here too.
"""

from __future__ import annotations

import base64
from typing import Any

from controlplane.api import jsoncodec
from controlplane.api.k8sproto.duration import format_duration
from controlplane.api.k8sproto.schema import (
    ARRAY,
    BOOL,
    BYTES,
    DURATION,
    FIELDS_V1,
    INT,
    INT_OR_STRING,
    MAP,
    MESSAGE,
    MICRO_TIME,
    QUANTITY,
    RAW,
    REPEATED,
    STRING,
    TIME,
    Field,
    Message,
    kind_message,
)
from controlplane.api.k8sproto.writer import encode, encode_here, put_bytes, put_varint
from machinery import rfc3339

MAX_NESTING = 100  # as Kubernetes' decoders
_U64 = 1 << 64
_I63 = 1 << 63


MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    """A message that cannot be read; the text names where and why."""


class Unsupported(ProtobufError):
    """A kind with no protobuf message: the client must use JSON."""


# -- reading ----------------------------------------------------------------------


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end:
            raise ProtobufError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint longer than 10 bytes")


def _skip(buf: bytes, pos: int, end: int, key: int) -> int:
    wire = key & 7
    if wire == 0:
        return _varint(buf, pos, end)[1]
    if wire == 2:
        size, pos = _varint(buf, pos, end)
        if size > end - pos:
            raise ProtobufError(
                f"field {key >> 3}: length {size} past the end of the message "
                f"({end - pos} bytes left)"
            )
        return pos + size
    width = 8 if wire == 1 else 4 if wire == 5 else 0
    if not width:
        raise ProtobufError(f"field {key >> 3}: unsupported wire type {wire}")
    if width > end - pos:
        raise ProtobufError(f"field {key >> 3}: truncated fixed-width value")
    return pos + width


def _signed(value: int) -> int:
    return value - _U64 if value >= _I63 else value


def _text(buf: bytes, pos: int, stop: int, name: str) -> str:
    try:
        return buf[pos:stop].decode()
    except UnicodeDecodeError:
        raise ProtobufError(f"{name}: not valid UTF-8") from None


def _time(buf: bytes, pos: int, end: int, micro: bool) -> str | None:
    seconds = nanos = 0
    while pos < end:
        key, pos = _varint(buf, pos, end)
        if key == 8:
            raw, pos = _varint(buf, pos, end)
            seconds = _signed(raw)
        elif key == 16:
            raw, pos = _varint(buf, pos, end)
            nanos = _signed(raw)
        else:
            pos = _skip(buf, pos, end, key)
    if not seconds and not nanos:
        return None  # Go's zero time: JSON null
    if not -62135596800 <= seconds <= 253402300799 or not 0 <= nanos < 1_000_000_000:
        raise ProtobufError(f"time {seconds}s {nanos}ns out of range")
    if micro:
        return rfc3339.format_micro_exact(seconds, nanos // 1000)
    return rfc3339.format_time(seconds)


def fields_of(buf: bytes, pos: int, end: int) -> dict[int, tuple[int, int] | int]:
    """A small message's fields: number -> (start, stop) or varint value."""
    out: dict[int, tuple[int, int] | int] = {}
    while pos < end:
        key, pos = _varint(buf, pos, end)
        if key & 7 == 0:
            out[key >> 3], pos = _varint(buf, pos, end)
        elif key & 7 == 2:
            stop = _skip(buf, pos, end, key)
            out[key >> 3] = (stop - _varint(buf, pos, end)[0], stop)
            pos = stop
        else:
            pos = _skip(buf, pos, end, key)
    return out


def _special(buf: bytes, pos: int, end: int, code: int, name: str, depth: int) -> Any:
    if code == QUANTITY and end - pos > 1 and buf[pos] == 10 and buf[pos + 1] == end - pos - 2:
        return _text(buf, pos + 2, end, name)  # the usual form: one short string
    if code in (TIME, MICRO_TIME):
        return _time(buf, pos, end, code == MICRO_TIME)
    parts = fields_of(buf, pos, end)
    if code == QUANTITY:
        span = parts.get(1)
        return _text(buf, span[0], span[1], name) if isinstance(span, tuple) else "0"
    if code == INT_OR_STRING:
        if parts.get(1, 0) == 1:
            span = parts.get(3)
            return _text(buf, span[0], span[1], name) if isinstance(span, tuple) else ""
        value = parts.get(2, 0)
        return _signed(value) if isinstance(value, int) else 0
    if code == DURATION:
        value = parts.get(1, 0)
        return format_duration(_signed(value) if isinstance(value, int) else 0)
    if code in (RAW, FIELDS_V1):
        span = parts.get(1)
        if not isinstance(span, tuple) or span[0] == span[1]:
            return None
        return _embedded(buf[span[0] : span[1]], name, depth)
    raise ProtobufError(f"{name}: unknown special message")  # pragma: no cover


def _embedded(raw: bytes, name: str, depth: int) -> Any:
    """A RawExtension's (or FieldsV1's) bytes: JSON, or a nested protobuf object."""
    if raw.startswith(MAGIC):
        return decode_document(raw, depth + 1)
    try:
        return jsoncodec.loads(raw)
    except (ValueError, UnicodeDecodeError, TypeError) as err:
        raise ProtobufError(f"{name or 'raw'}: not JSON: {err}") from None


def decode(data: bytes, message: Message, depth: int = 0) -> Any:
    """The object `data` (one message's bytes) holds, as JSON has it."""
    return _message(data, 0, len(data), message, depth)


def _message(buf: bytes, pos: int, end: int, m: Message, depth: int) -> Any:
    if depth > MAX_NESTING:
        raise ProtobufError(f"messages nested more than {MAX_NESTING} deep")
    if m.special != MESSAGE:
        if m.special == ARRAY:
            out = _message_fields(buf, pos, end, m, depth)
            return out.get("items", [])
        return _special(buf, pos, end, m.special, m.name, depth)
    return _message_fields(buf, pos, end, m, depth)


def _message_fields(buf: bytes, pos: int, end: int, m: Message, depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    by_key = m.by_key
    while pos < end:
        key = buf[pos]
        if key < 0x80:
            pos += 1
        else:
            key, pos = _varint(buf, pos, end)
        f = by_key.get(key)
        if f is None:
            pos = _skip(buf, pos, end, key)  # an unknown field, or a wrong wire type
            continue
        code = f.code
        if key & 7 == 0:  # bool, int
            value, pos = _varint(buf, pos, end)
            if code == BOOL:
                item: Any = value != 0
            else:
                item = value - _U64 if value >= _I63 else value
            if f.mode == REPEATED:
                out.setdefault(f.name, []).append(item)
            elif item or f.pointer:
                out[f.name] = item
            continue
        if pos >= end:
            raise ProtobufError(f"{f.name}: truncated length")
        size = buf[pos]
        if size < 0x80:
            pos += 1
        else:
            size, pos = _varint(buf, pos, end)
        stop = pos + size
        if stop > end:
            raise ProtobufError(
                f"{f.name or m.name}: length {size} past the end of the message "
                f"({end - pos} bytes left)"
            )
        if key == f.packed_tag:  # repeated integers, packed
            items = out.setdefault(f.name, [])
            while pos < stop:
                value, pos = _varint(buf, pos, stop)
                items.append(value != 0 if code == BOOL else _signed(value))
            continue
        if f.mode == MAP:
            k, v = _entry(buf, pos, stop, f, depth)
            out.setdefault(f.name, {})[k] = v
        else:
            if code == STRING:
                try:
                    item = buf[pos:stop].decode()
                except UnicodeDecodeError:
                    raise ProtobufError(f"{f.name}: not valid UTF-8") from None
            elif code == MESSAGE:
                assert f.message is not None
                item = _message_fields(buf, pos, stop, f.message, depth + 1)
            elif code == BYTES:
                item = base64.b64encode(buf[pos:stop]).decode()
            else:
                assert f.message is not None
                item = _message(buf, pos, stop, f.message, depth + 1)
            if f.mode == REPEATED:
                out.setdefault(f.name, []).append(item)
            elif f is m.inline:
                out.update(item)
            elif item is None:
                pass  # a zero time, an empty RawExtension: null in JSON
            elif (
                f.pointer
                or (code >= MESSAGE and code != INT_OR_STRING)
                or (item != "" and item != 0)
            ):
                out[f.name] = item  # a non-pointer "" or IntOrString 0 is Go's unset
        pos = stop
    return out


def _entry(buf: bytes, pos: int, end: int, f: Field, depth: int) -> tuple[str, Any]:
    """One map<string, T> entry: key = 1, value = 2."""
    key = ""
    value: Any = None
    code = f.code
    if end - pos > 3 and buf[pos] == 10 and buf[pos + 1] < 0x80:  # the usual form, at once
        stop = pos + 2 + buf[pos + 1]
        if stop + 1 < end and buf[stop] == 18 and buf[stop + 1] == end - stop - 2:
            key = _text(buf, pos + 2, stop, f.name)
            if code == STRING:
                return key, _text(buf, stop + 2, end, f.name)
            if code == QUANTITY:
                return key, _special(buf, stop + 2, end, QUANTITY, f.name, depth)
    while pos < end:
        tag, pos = _varint(buf, pos, end)
        if tag == 10:
            stop = _skip(buf, pos, end, tag)
            pos = stop - _varint(buf, pos, end)[0]
            key = _text(buf, pos, stop, f.name)
            pos = stop
        elif tag == 18 and f.code != BOOL and f.code != INT:
            stop = _skip(buf, pos, end, tag)
            pos = stop - _varint(buf, pos, end)[0]
            if f.code == STRING:
                value = _text(buf, pos, stop, f.name)
            elif f.code == BYTES:
                value = base64.b64encode(buf[pos:stop]).decode()
            else:
                assert f.message is not None
                value = _message(buf, pos, stop, f.message, depth + 1)
            pos = stop
        elif tag == 16 and f.code in (BOOL, INT):
            raw, pos = _varint(buf, pos, end)
            value = raw != 0 if f.code == BOOL else _signed(raw)
        else:
            pos = _skip(buf, pos, end, tag)
    if value is None:
        value = {STRING: "", BYTES: "", BOOL: False, INT: 0, QUANTITY: "0"}.get(f.code, {})
    return key, value


# -- documents --------------------------------------------------------------------


def _type_meta(buf: bytes, start: int, stop: int) -> tuple[str, str]:
    parts = fields_of(buf, start, stop)
    out = []
    for number in (1, 2):
        span = parts.get(number)
        if isinstance(span, tuple):
            try:
                out.append(buf[span[0] : span[1]].decode())
            except UnicodeDecodeError:
                raise ProtobufError("typeMeta: not valid UTF-8") from None
        else:
            out.append("")
    return out[0], out[1]


def unwrap(data: bytes) -> tuple[str, str, bytes]:
    """(apiVersion, kind, raw message) of a whole protobuf document."""
    if not data.startswith(MAGIC):
        raise ProtobufError(
            "the body does not appear to be a protobuf message: it must start with the magic k8s\\x00"
        )
    end = len(data)
    if end == len(MAGIC):
        raise ProtobufError("empty body after the k8s\\x00 magic")
    found = _usual_envelope(data)
    if found is not None:
        return found
    parts = fields_of(data, len(MAGIC), end)
    meta = parts.get(1)
    api_version, kind = _type_meta(data, *meta) if isinstance(meta, tuple) else ("", "")
    encoding = parts.get(3)
    if isinstance(encoding, tuple) and encoding[0] != encoding[1]:
        text = data[encoding[0] : encoding[1]].decode(errors="replace")[:64]
        raise Unsupported(f"contentEncoding {text!r} is not supported")
    raw = parts.get(2)
    body = data[raw[0] : raw[1]] if isinstance(raw, tuple) else b""
    if not kind:
        raise ProtobufError("the envelope's typeMeta names no kind")
    if not api_version:
        raise ProtobufError(f"the envelope's typeMeta names no apiVersion for {kind}")
    return api_version, kind, body


_TAILS = (b"", b"\x1a\x00\x22\x00", b"\x1a\x00", b"\x22\x00")


def _usual_envelope(data: bytes) -> tuple[str, str, bytes] | None:
    """The envelope as Go writes it (short typeMeta, raw, empty encodings),
    read at once; None for any other shape (read field by field)."""
    try:
        if data[4] != 10 or data[6] != 10 or data[5] >= 128 or data[7] >= 128:
            return None
        meta_end = 6 + data[5]
        version_end = 8 + data[7]
        if data[version_end] != 18 or data[version_end + 1] >= 128:
            return None
        if version_end + 2 + data[version_end + 1] != meta_end or data[meta_end] != 18:
            return None
        size, start = _varint(data, meta_end + 1, len(data))
        if start + size > len(data) or data[start + size :] not in _TAILS:
            return None
        api_version = data[8:version_end].decode()
        kind = data[version_end + 2 : meta_end].decode()
    except (IndexError, UnicodeDecodeError, ProtobufError):
        return None
    if not api_version or not kind:
        return None
    return api_version, kind, data[start : start + size]


def message_of(api_version: str, kind: str) -> Message:
    found = kind_message(api_version, kind)
    if found is None:
        raise Unsupported(
            f"{kind} ({api_version or 'no apiVersion'}) has no protobuf serialization: "
            "use application/json"
        )
    return found


def decode_document(data: bytes, depth: int = 0) -> dict[str, Any]:
    """The object of a protobuf document, with its apiVersion and kind."""
    api_version, kind, raw = unwrap(data)
    obj = decode(raw, message_of(api_version, kind), depth)
    if not isinstance(obj, dict):  # pragma: no cover - kinds are messages
        raise ProtobufError(f"{kind} is not an object")
    return {"apiVersion": api_version, "kind": kind, **obj}


__all__ = ["encode", "encode_here", "put_bytes", "put_varint"]
