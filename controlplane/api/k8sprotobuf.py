"""Kubernetes' protobuf request bodies, for the review kinds clients send that way.

kubectl with in-cluster configuration (a pod's ServiceAccount token) POSTs
its SelfSubjectAccessReview (`kubectl auth can-i`) as
`application/vnd.kubernetes.protobuf`, whatever the server's discovery says.
Such a body is the magic `k8s\\x00` then a `runtime.Unknown` message
(typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2, contentEncoding = 3,
contentType = 4) whose `raw` is the object's own message. `decode` turns the
access and token review kinds (field numbers from k8s.io/api's
generated.proto) into the JSON-shaped dict the registry takes; any other
kind is refused with ValueError naming it, so the client hears to send JSON.
Pure decoding: nothing here touches a request or the registry.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Union

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

# A message's fields: number -> (JSON name, nested schema or None for a
# string, repeated?).
Schema = dict[int, tuple[str, Union["Schema", None], bool]]

_OBJECT_META: Schema = {1: ("name", None, False), 2: ("generateName", None, False),
                        3: ("namespace", None, False)}  # fmt: skip
_RESOURCE: Schema = {
    1: ("namespace", None, False),
    2: ("verb", None, False),
    3: ("group", None, False),
    4: ("version", None, False),
    5: ("resource", None, False),
    6: ("subresource", None, False),
    7: ("name", None, False),
}
_NON_RESOURCE: Schema = {1: ("path", None, False), 2: ("verb", None, False)}
_SELF_SPEC: Schema = {1: ("resourceAttributes", _RESOURCE, False),
                      2: ("nonResourceAttributes", _NON_RESOURCE, False)}  # fmt: skip
_SUBJECT_SPEC: Schema = {**_SELF_SPEC, 3: ("user", None, False), 4: ("groups", None, True),
                         6: ("uid", None, False)}  # fmt: skip
_TOKEN_SPEC: Schema = {1: ("token", None, False), 2: ("audiences", None, True)}
_RULES_SPEC: Schema = {1: ("namespace", None, False)}


def _object(spec: Schema) -> Schema:
    return {1: ("metadata", _OBJECT_META, False), 2: ("spec", spec, False)}


KINDS: dict[str, Schema] = {
    "SelfSubjectAccessReview": _object(_SELF_SPEC),
    "SubjectAccessReview": _object(_SUBJECT_SPEC),
    "LocalSubjectAccessReview": _object(_SUBJECT_SPEC),
    "SelfSubjectRulesReview": _object(_RULES_SPEC),
    "TokenReview": _object(_TOKEN_SPEC),
}
_TYPE_META: Schema = {1: ("apiVersion", None, False), 2: ("kind", None, False)}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated or overlong varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of each field of one message."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ValueError(f"field {number}: length {size} past the end of the message")
            value, pos = data[pos : pos + size], pos + size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            value, pos = data[pos : pos + width], pos + width
        else:
            raise ValueError(f"field {number}: unsupported wire type {wire}")
        yield number, wire, value


def _message(data: bytes, schema: Schema, depth: int = 0) -> dict[str, Any]:
    if depth > 8:
        raise ValueError("message nested too deeply")
    out: dict[str, Any] = {}
    for number, wire, value in _fields(data):
        known = schema.get(number)
        if known is None or wire != 2:
            continue  # a field skiff does not read (status, labels, ...)
        name, nested, repeated = known
        item = _message(value, nested, depth + 1) if nested is not None else value.decode()
        if repeated:
            out.setdefault(name, []).append(item)
        else:
            out[name] = item
    return out


def decode(data: bytes) -> dict[str, Any]:
    """The object of a protobuf body; ValueError saying why it cannot be read."""
    if not data.startswith(MAGIC):
        raise ValueError("a protobuf body starts with the magic k8s\\x00")
    envelope: dict[str, Any] = {}
    raw = b""
    for number, wire, value in _fields(data[len(MAGIC) :]):
        if number == 1 and wire == 2:
            envelope = _message(value, _TYPE_META)
        elif number == 2 and wire == 2:
            raw = value
        elif number == 3 and wire == 2 and value:
            raise ValueError(f"content encoding {value.decode(errors='replace')!r} unsupported")
    kind = str(envelope.get("kind") or "")
    schema = KINDS.get(kind)
    if schema is None:
        raise ValueError(
            f"protobuf bodies are read for {', '.join(sorted(KINDS))} only, not {kind or 'this'}"
            "; send application/json"
        )
    obj = _message(raw, schema)
    return {"apiVersion": envelope.get("apiVersion", ""), "kind": kind, **obj}
