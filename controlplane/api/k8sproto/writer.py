"""The writing half of the converter (codec.py reads): skiff's dict objects as
Kubernetes' protobuf messages.

`encode` hands an object to protobuf's C runtime (fast.py) and, where that
cannot take it, writes it here field by field: only the keys the object
has (a Go reader takes a missing field as its zero), skipping a value whose
type its field cannot carry rather than failing, since it writes objects
the registry already validated. Both write a map's entries ascending by
key, as Kubernetes' generated Marshal does (sort.Strings of the keys).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from controlplane.api import jsoncodec
from controlplane.api.k8sproto import fast
from controlplane.api.k8sproto.duration import parse_duration
from controlplane.api.k8sproto.schema import (
    ARRAY,
    BOOL,
    BYTES,
    DURATION,
    FIELDS_V1,
    INT,
    INT_OR_STRING,
    MESSAGE,
    MICRO_TIME,
    QUANTITY,
    RAW,
    REPEATED,
    SINGLE,
    STRING,
    TIME,
    Field,
    Message,
)
from machinery import rfc3339

_U64 = 1 << 64


def put_varint(out: bytearray, value: int) -> None:
    if value < 0:
        value += _U64
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)


def put_bytes(out: bytearray, tag: bytes, data: bytes | bytearray) -> None:
    out += tag
    size = len(data)
    if size < 0x80:
        out.append(size)
    else:
        put_varint(out, size)
    out += data


def sorted_items(value: dict[Any, Any]) -> list[tuple[Any, Any]]:
    """A map's entries in Go's order: by key, ascending, as sort.Strings
    orders them (byte order of UTF-8, which is Python's order of str)."""
    try:
        return sorted(value.items())
    except TypeError:  # a key that is not a str: as written, str(key)
        return sorted(value.items(), key=lambda item: str(item[0]))


def encode(obj: Any, message: Message) -> bytes:
    """The message's bytes for `obj` (the object as JSON has it): written by
    protobuf's C runtime when it can take the object (fast.py), else here."""
    if obj.__class__ is dict:
        data = fast.encode(obj, message)
        if data is not None:
            return data
    return encode_here(obj, message)


def encode_here(obj: Any, message: Message) -> bytes:
    """The same bytes, written field by field in Python: skips a value its
    field cannot carry rather than fail."""
    out = bytearray()
    _write(out, obj, message)
    return bytes(out)


def _write(out: bytearray, obj: Any, m: Message) -> None:
    special = m.special
    if special != MESSAGE:
        _write_special(out, obj, special)
        return
    if obj.__class__ is not dict:
        return
    by_name = m.by_name
    inline: dict[str, Any] | None = {} if m.inline is not None else None
    for name, value in obj.items():
        f = by_name.get(name)
        if f is None:
            if inline is not None:
                inline[name] = value
            continue
        if value is None:
            continue
        # The common cases written here, without a call each (a pod has ~100).
        mode = f.mode
        code = f.code
        cls = value.__class__
        if mode == SINGLE:
            if code == STRING and cls is str:
                data = value.encode()
                size = len(data)
                out += f.tag
                if size < 0x80:
                    out.append(size)
                else:
                    put_varint(out, size)
                out += data
            elif code == MESSAGE and cls is dict:
                assert f.message is not None
                sub = bytearray()
                _write(sub, value, f.message)
                size = len(sub)
                out += f.tag
                if size < 0x80:
                    out.append(size)
                else:
                    put_varint(out, size)
                out += sub
            elif code == INT and cls is int and 0 <= value < 0x80:
                out += f.tag
                out.append(value)
            else:
                _write_one(out, f, value)
        elif mode == REPEATED:
            if cls is list:
                for item in value:
                    _write_one(out, f, item)
        elif cls is dict:  # MAP
            scalar_tag = b"\x10" if code in (BOOL, INT) else b"\x12"
            for k, v in sorted_items(value):
                if v is None:
                    continue
                entry = bytearray(b"\n")
                key = str(k).encode()
                size = len(key)
                if size < 0x80:
                    entry.append(size)
                else:
                    put_varint(entry, size)
                entry += key
                if code == STRING and v.__class__ is str:
                    data = v.encode()
                    entry += b"\x12"
                    put_varint(entry, len(data))
                    entry += data
                else:
                    _write_one(entry, f, v, scalar_tag)
                out += f.tag
                put_varint(out, len(entry))
                out += entry
    if inline:
        assert m.inline is not None and m.inline.message is not None
        sub = bytearray()
        _write(sub, inline, m.inline.message)
        put_bytes(out, m.inline.tag, sub)


def _write_one(out: bytearray, f: Field, value: Any, tag: bytes | None = None) -> None:
    code = f.code
    tag = f.tag if tag is None else tag
    if code == STRING:
        if isinstance(value, str):
            put_bytes(out, tag, value.encode())
        elif isinstance(value, int | float) and not isinstance(value, bool):
            put_bytes(out, tag, str(value).encode())
    elif code == INT:
        if isinstance(value, int | float) and not isinstance(value, bool):
            out += tag
            put_varint(out, int(value))
    elif code == BOOL:
        if isinstance(value, bool):
            out += tag
            out.append(1 if value else 0)
    elif code == BYTES:
        if isinstance(value, str):
            try:
                put_bytes(out, tag, base64.b64decode(value))
            except (binascii.Error, ValueError):
                pass
    else:
        assert f.message is not None
        sub = bytearray()
        _write(sub, value, f.message)
        if (code in (TIME, MICRO_TIME)) and not sub:
            return  # a null time: left out
        put_bytes(out, tag, sub)


def _write_special(out: bytearray, value: Any, special: int) -> None:
    if special in (TIME, MICRO_TIME):
        if isinstance(value, str) and value:
            try:
                ns = rfc3339.parse_nano(value)
            except ValueError:
                return
            seconds, nanos = divmod(ns, 1_000_000_000)
            out.append(8)
            put_varint(out, seconds)
            if nanos:
                out.append(16)
                put_varint(out, nanos)
    elif special == QUANTITY:
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            put_bytes(out, b"\n", str(value).encode())
    elif special == INT_OR_STRING:
        if isinstance(value, str):
            out += b"\x08\x01"
            put_bytes(out, b"\x1a", value.encode())
        elif isinstance(value, int) and not isinstance(value, bool):
            out += b"\x08\x00\x10"
            put_varint(out, value)
    elif special in (RAW, FIELDS_V1):
        put_bytes(out, b"\n", jsoncodec.dumps(value))
    elif special == DURATION:
        length = parse_duration(value) if isinstance(value, str) else None
        if length is not None:
            out.append(8)
            put_varint(out, length)
    elif special == ARRAY and isinstance(value, list):
        for item in value:
            if isinstance(item, str):
                put_bytes(out, b"\n", item.encode())
