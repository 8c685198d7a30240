"""Every map field is written in Kubernetes' order, by every encode path.

Kubernetes' generated Marshal (gogo protobuf, k8s.io/api generated.pb.go)
collects a map's keys, sort.Strings them and writes the entries ascending
by key, whatever the value type (string, bytes, Quantity, Time,
ExtraValue). This walks each built-in kind's message for every map field it
reaches, fills each with the same keys in shuffled order (keys that are
prefixes of others, mixed case, non-ASCII: where protobuf's own
deterministic order and Go's differ), encodes the object by each path the
server has (the C runtime, the Python writer, the stored-version writer with
its caches, documents, lists, watch frames) and reads the entries back in
wire order."""

from __future__ import annotations

import base64
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from controlplane.api import jsoncodec, kinds
from controlplane.api.k8sproto import codec, envelope, fast, stored
from controlplane.api.k8sproto.schema import (
    ARRAY,
    BYTES,
    MAP,
    MESSAGE,
    QUANTITY,
    REPEATED,
    STRING,
    TIME,
    Message,
)

KEYS = ["app", "app.kubernetes.io/name", "a", "ab", "k1", "k10", "k2", "Zone", "z", "é", "-x"]
SHUFFLED = KEYS[:]
random.Random(28).shuffle(SHUFFLED)
GO_ORDER = sorted(k.encode() for k in KEYS)  # sort.Strings: byte order


def _value(code: int, key: str) -> Any:
    if code == STRING:
        return f"v-{key}"
    if code == BYTES:
        return base64.b64encode(key.encode()).decode()
    if code == QUANTITY:
        return "100m"
    if code == TIME:
        return "2026-12-03T04:29:00Z"
    if code == ARRAY:  # ExtraValue: a list of strings
        return [key]
    raise AssertionError(f"a map of code {code}: add its value here")


def _leads_to_map(m: Message, seen: frozenset[str] = frozenset()) -> bool:
    return any(
        f.mode == MAP
        or (
            f.message is not None
            and f.message.special == MESSAGE
            and f.message.name not in seen
            and _leads_to_map(f.message, seen | {m.name})
        )
        for f in m.fields
    )


def build(m: Message, stack: frozenset[str] = frozenset()) -> dict[str, Any]:
    """An object of `m` with every map field it reaches filled, in SHUFFLED order."""
    out: dict[str, Any] = {}
    for f in m.fields:
        if f.mode == MAP:
            out[f.name] = {k: _value(f.code, k) for k in SHUFFLED}
            continue
        sub = f.message
        if sub is None or sub.special != MESSAGE or sub.name in stack:
            continue
        if not _leads_to_map(sub, stack | {m.name}):
            continue
        value = build(sub, stack | {m.name})
        if f is m.inline:
            out.update(value)  # Go inlines it: its fields are the parent's in JSON
        elif f.mode == REPEATED:
            out[f.name] = [value]
        else:
            out[f.name] = value
    return out


def maps_in(obj: Any, m: Message, path: str = "") -> Iterator[tuple[str, list[str]]]:
    """(path, keys in the order read) of every map in a decoded object."""
    if not isinstance(obj, dict):
        return
    for f in m.fields:
        if f is m.inline:
            assert f.message is not None
            yield from maps_in(obj, f.message, path)
            continue
        value = obj.get(f.name)
        if value is None:
            continue
        here = f"{path}.{f.name}"
        if f.mode == MAP:
            yield here, list(value)
        elif f.message is not None and f.message.special == MESSAGE:
            for item in value if f.mode == REPEATED else [value]:
                yield from maps_in(item, f.message, here)


def _kinds() -> list[tuple[str, str]]:
    found = sorted(
        {
            (info.api_version, info.kind)
            for info in kinds.builtin_kinds()
            if envelope.supported(info.api_version, info.kind)
            and _leads_to_map(codec.message_of(info.api_version, info.kind))
        }
    )
    assert len(found) > 30, "every built-in kind has metadata.labels at least"
    return found


KINDS = _kinds()


@pytest.fixture(autouse=True)
def empty_caches() -> Iterator[None]:
    stored.clear()
    yield
    stored.clear()


def _check(raw: bytes, m: Message, expected: int, how: str) -> None:
    found = list(maps_in(codec.decode(raw, m), m))
    assert len(found) == expected, f"{how}: {len(found)} maps read back of {expected}"
    for path, keys in found:
        assert [k.encode() for k in keys] == GO_ORDER, f"{how}: {path} in {keys}"


def _in_list(doc: bytes, kind: str) -> bytes:
    """The first item's message of a List document."""
    _, _, raw = codec.unwrap(doc)
    parts = codec.fields_of(raw, 0, len(raw))
    span = parts[2]
    assert isinstance(span, tuple)
    return raw[span[0] : span[1]]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: f"{k[0]}/{k[1]}")
def test_every_map_is_written_ascending_by_key(kind: tuple[str, str]) -> None:
    api_version, name = kind
    m = codec.message_of(api_version, name)
    obj = build(m)
    assert obj and SHUFFLED != KEYS and sorted(SHUFFLED) != SHUFFLED
    expected = len(list(maps_in(obj, m)))
    assert expected >= 1
    in_c = fast.encode(obj, m)
    assert in_c is not None, "protobuf's C runtime took the object"
    paths: dict[str, Callable[[], bytes]] = {
        "C runtime": lambda: in_c,
        "Python writer": lambda: codec.encode_here(obj, m),
        "codec.encode": lambda: codec.encode(obj, m),
        "stored.encode": lambda: stored.encode(obj, m),
        "stored.encode, cached parts": lambda: stored.encode(obj, m),
    }
    doc = {"apiVersion": api_version, "kind": name, **obj}
    data = jsoncodec.dumps(doc)
    docs: dict[str, Callable[[], bytes]] = {
        "envelope.encode": lambda: envelope.encode(doc),
        "stored.document": lambda: stored.document(data, 0, api_version, name),
        "stored.document, revision 7": lambda: stored.document(data, 7, api_version, name),
        "stored.document, cached answer": lambda: stored.document(data, 7, api_version, name),
        "stored.document of the create": lambda: stored.document(data, 8, api_version, name, doc),
    }
    for how, write in paths.items():
        raw = write()
        _check(raw, m, expected, how)
        if how != "Python writer":  # which writes fields in the object's key order
            assert raw == in_c, f"{how}: the same bytes as the C runtime's"
    for how, write in docs.items():
        _check(codec.unwrap(write())[2], m, expected, how)
    if envelope.supported(api_version, f"{name}List"):
        lists = {
            "envelope.encode_list": envelope.encode_list(api_version, name, [obj], {}),
            "stored.list_document": stored.list_document([(data, 9)], {}, api_version, name),
        }
        for how, listed in lists.items():
            _check(_in_list(listed, name), m, expected, how)
    frame = stored.watch_frame("ADDED", data, 10, api_version, name)
    event = frame[4:]
    parts = codec.fields_of(event, 0, len(event))
    span = parts[2]
    assert isinstance(span, tuple)
    raw_ext = codec.fields_of(event, span[0], span[1])[1]
    assert isinstance(raw_ext, tuple)
    _check(codec.unwrap(event[raw_ext[0] : raw_ext[1]])[2], m, expected, "stored.watch_frame")


def test_the_order_is_go_sort_strings_not_protobuf_deterministic() -> None:
    # upb's deterministic order puts "ab" before "a" (and "k10" before "k1");
    # Go's sort.Strings, and so Kubernetes' bytes, put the prefix first.
    m = codec.message_of("v1", "ConfigMap")
    raw = codec.encode({"data": {"ab": "2", "a": "1"}}, m)
    assert raw == b"\x12\x06\n\x01a\x12\x011\x12\x07\n\x02ab\x12\x012"
