"""Protobuf answers for stored objects, each stored version encoded once.

The store keeps JSON, which a JSON answer sends as it is (the resourceVersion
written in); a protobuf answer must be encoded. Bounded caches keep that
work from being done twice:

- the answers: revision -> the message of the object stored at it (with its
  resourceVersion), checked against the stored bytes' length and hash and
  the kind before it is used (a revision is one write of one object;
  several stores in one process, or etcd's shared transaction revisions,
  just miss). A get, each item of a List and a watch event of a version
  already encoded cost a lookup and a join. The stored bytes themselves
  are not kept (their length and hash check a hit): the budget holds
  answers only.
- the recent creates' answers, the same, in a small cache of their own: a
  create's answer is read soon (its watch events, a get right after) or
  not at all, and a cache this small frees its oldest entries while their
  memory is still in the CPU's caches. Kept with the reads' answers, every
  protobuf create evicted one written thousands of creates before: 2-3%
  more of the server's CPU per create (bench.kubeapi).
- the parts: the bytes of a sub-object (a spec, a status, managedFields) by
  its JSON, so objects made from one template (a ReplicaSet's pods) encode
  only what differs, their metadata, when first answered.

All are FIFO within a byte budget. Nothing here changes the bytes: a
message is the same fields in the same order as codec.encode writes for
the whole object.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from controlplane.api import jsoncodec
from controlplane.api.k8sproto import codec, envelope, fast
from controlplane.api.k8sproto.codec import message_of
from controlplane.api.k8sproto.fifo import Fifo
from controlplane.api.k8sproto.schema import MAP, MESSAGE, SINGLE, STRING, Field, Message, message

ANSWERS_BUDGET = 32 << 20
RECENT_BUDGET = 1 << 20  # about 700 answers of a pod
PARTS_BUDGET = 8 << 20
_TAIL = b"\x1a\x00\x22\x00"  # contentEncoding and contentType, empty, as Go writes them

_PLAIN, _STRINGS, _META, _PART = range(4)
_MANAGED_TAG = b"\x8a\x01"  # ObjectMeta.managedFields = 17, length-delimited

_answers = Fifo(ANSWERS_BUDGET)  # rev -> (len, hash of data, api_version, kind, sized raw, size)
_recent = Fifo(RECENT_BUDGET)  # the same, of creates
_parts = Fifo(PARTS_BUDGET)  # (message name, JSON) -> (bytes, size)


def clear() -> None:
    """Forget every cached encoding (benchmarks measure first answers so)."""
    forget_answers()
    _parts.clear()


def forget_answers() -> None:
    """Forget the answers, keep the parts (a new version of a known shape)."""
    _answers.clear()
    _recent.clear()


_SMALL = [bytes((n,)) for n in range(0x80)]


def _varint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _SMALL[value]
    if 0 <= value < 0x4000:
        return bytes((value & 0x7F | 0x80, value >> 7))
    out = bytearray()
    codec.put_varint(out, value)
    return bytes(out)


_plans: dict[str, list[tuple[Field, int]] | None] = {}
_kinds: dict[tuple[str, str], Message] = {}


def _plan(m: Message) -> list[tuple[Field, int]] | None:
    """m's fields in wire order, each with how it is written; None for a
    message written whole: one with a field Go inlines, or with no sub-object
    to share (a ConfigMap, a Secret), which the C runtime writes cheaper in
    one call."""
    if m.name in _plans:
        return _plans[m.name]
    plan: list[tuple[Field, int]] | None = []
    assert plan is not None
    for f in sorted(m.fields, key=lambda f: f.number):
        if f.name == "metadata" and f.message is message("meta/v1.ObjectMeta"):
            plan.append((f, _META))
        elif f.mode == SINGLE and f.code == MESSAGE:
            plan.append((f, _PART))
        elif f.mode == MAP and f.code == STRING:
            plan.append((f, _STRINGS))
        else:
            plan.append((f, _PLAIN))
    if m.inline is not None or all(how != _PART for _, how in plan):
        plan = None
    _plans[m.name] = plan
    return plan


def _part(value: Any, m: Message) -> bytes:
    """The bytes of a sub-object, from the cache of parts when seen before."""
    try:
        key = (m.name, jsoncodec.dumps(value))
    except TypeError:  # not JSON data: written as codec writes it, uncached
        return codec.encode(value, m)
    found = _parts.items.get(key)
    if found is not None:
        return found[0]  # type: ignore[no-any-return]
    data = codec.encode(value, m)
    _parts.put(key, (data,), len(key[1]) + len(data))
    return data


def _string_map(out: list[bytes], tag: bytes, value: dict[str, Any]) -> bool:
    """A map<string, string>'s entries {key = 1, value = 2}, in Go's sorted key
    order, onto `out`; False (and `out` to be dropped) unless all are strings."""
    for key in sorted(value):
        item = value[key]
        if key.__class__ is not str or item.__class__ is not str:
            return False
        k, v = key.encode(), item.encode()
        entry = b"".join((b"\n", _varint(len(k)), k, b"\x12", _varint(len(v)), v))
        out += (tag, _varint(len(entry)), entry)
    return True


_label_maps: dict[tuple[tuple[Any, Any], ...], bytes] = {}  # labels' items -> their entries
_LABEL_MAPS = 4096


def _labels(out: list[bytes], tag: bytes, value: dict[str, Any]) -> bool:
    """_string_map of metadata.labels, whose few sets (a template's pods share
    theirs) are kept written, by their items in the order the object has them."""
    try:
        key = tuple(value.items())
        found = _label_maps.get(key)
    except TypeError:  # a value that is not hashable: not a string either
        return False
    if found is None:
        written: list[bytes] = []
        if not _string_map(written, tag, value):
            return False
        if len(_label_maps) >= _LABEL_MAPS:
            _label_maps.clear()
        found = _label_maps[key] = b"".join(written)
    out.append(found)
    return True


# ObjectMeta's fields as the writer below takes them: name -> (number, tag, how).
_STR, _INT, _TIME, _MAP, _PARTS, _STRS = range(6)
_META_FIELDS = {
    "name": (1, b"\n", _STR), "generateName": (2, b"\x12", _STR),
    "namespace": (3, b"\x1a", _STR), "selfLink": (4, b"\x22", _STR),
    "uid": (5, b"\x2a", _STR), "resourceVersion": (6, b"\x32", _STR),
    "generation": (7, b"8", _INT), "creationTimestamp": (8, b"B", _TIME),
    "deletionTimestamp": (9, b"J", _TIME), "deletionGracePeriodSeconds": (10, b"P", _INT),
    "labels": (11, b"Z", _MAP), "annotations": (12, b"b", _MAP),
    "ownerReferences": (13, b"j", _PARTS), "finalizers": (14, b"r", _STRS),
    "managedFields": (17, _MANAGED_TAG, _PARTS),
}  # fmt: skip


def _meta_fields(meta: dict[str, Any], m: Message) -> bytes | None:
    """ObjectMeta written here for the usual values (strings, integers, RFC 3339
    times, string maps in Go's sorted key order, lists of strings or parts);
    None for anything else, which codec writes. The writer is code compiled
    per order of keys (the registry writes every object's the same way):
    the values unpacked at once, each field written in number order."""
    shape = tuple(meta)
    writer = _meta_writers.get(shape, _UNSEEN)
    if writer is _UNSEEN:
        writer = _meta_writer(shape)
        if len(_meta_writers) < _MAX_SHAPES:
            _meta_writers[shape] = writer
    return None if writer is None else writer(meta, m)


_UNSEEN: Any = object()
_MAX_SHAPES = 256
_meta_writers: dict[tuple[str, ...], Any] = {}  # key order -> writer (None: codec writes it)


def _meta_writer(shape: tuple[str, ...]) -> Any:
    if not shape or any(name not in _META_FIELDS for name in shape):
        return None  # a key this writer does not know
    lines = ["def write(meta, m):",
             f"    {''.join(f'v{i}, ' for i in range(len(shape)))}= meta.values()",
             "    out = []"]  # fmt: skip
    for name in sorted(shape, key=lambda name: _META_FIELDS[name][0]):
        v = f"v{shape.index(name)}"
        _, tag, how = _META_FIELDS[name]
        lines += [f"    if {v} is not None:"]
        if how == _STR:
            lines += [f"        if {v}.__class__ is not str:", "            return None",
                      f"        d = {v}.encode()", "        n = len(d)",
                      f"        out += ({tag!r}, _SMALL[n] if n < 128 else _varint(n), d)"]  # fmt: skip
        elif how == _INT:
            lines += [f"        if {v}.__class__ is not int:", "            return None",
                      f"        out += ({tag!r}, _varint({v}))"]  # fmt: skip
        elif how == _TIME:
            lines += [f"        d = _time_field({v}) if {v}.__class__ is str else None",
                      "        if d is None:", "            return None",
                      "        if d:", f"            out += ({tag!r}, d)"]  # fmt: skip
        elif how == _MAP:
            fill = "_labels" if name == "labels" else "_string_map"
            lines += [f"        if {v}.__class__ is not dict or not {fill}(out, {tag!r}, {v}):",
                      "            return None"]  # fmt: skip
        else:
            fill = (f"_part_list(out, {tag!r}, {v}, m.by_name[{name!r}].message)"
                    if how == _PARTS else f"_string_list(out, {tag!r}, {v})")  # fmt: skip
            lines += [f"        if {v}.__class__ is not list or not {fill}:",
                      "            return None"]  # fmt: skip
    lines.append('    return b"".join(out)')
    scope: dict[str, Any] = {"_SMALL": _SMALL, "_varint": _varint, "_time_field": _time_field,
                             "_string_map": _string_map, "_labels": _labels, "_part_list": _part_list,
                             "_string_list": _string_list}  # fmt: skip
    exec(compile("\n".join(lines) + "\n", "<k8sproto ObjectMeta writer>", "exec"), scope)
    return scope["write"]


@lru_cache(maxsize=4096)
def _time_field(value: str) -> bytes | None:
    """Time {seconds = 1, nanos = 2}, its length first; b"" for "" (Go's zero
    time, left out), None when `value` is not an RFC 3339 time."""
    if not value:
        return b""
    try:
        stamp = fast.time_of(value)
    except ValueError:
        return None
    data = b"\x08" + _varint(stamp["seconds"])
    if "nanos" in stamp:
        data += b"\x10" + _varint(stamp["nanos"])
    return _SMALL[len(data)] + data


def _part_list(out: list[bytes], tag: bytes, items: list[Any], sub: Message | None) -> bool:
    """ownerReferences, managedFields: each item a part; False unless all are objects."""
    assert sub is not None
    for item in items:
        if item.__class__ is not dict:
            return False
        data = _part(item, sub)
        out += (tag, _varint(len(data)), data)
    return True


def _string_list(out: list[bytes], tag: bytes, items: list[Any]) -> bool:
    """finalizers; False unless all are strings."""
    for item in items:
        if item.__class__ is not str:
            return False
        data = item.encode()
        out += (tag, _varint(len(data)), data)
    return True


def _metadata(meta: Any, m: Message) -> bytes:
    if meta.__class__ is dict:
        found = _meta_fields(meta, m)
        if found is not None:
            return found
    managed = meta.get("managedFields") if meta.__class__ is dict else None
    if not managed or managed.__class__ is not list:
        return codec.encode(meta, m)
    rest = {k: v for k, v in meta.items() if k != "managedFields"}
    entry = m.by_name["managedFields"].message
    assert entry is not None
    out = [codec.encode(rest, m)]
    for item in managed:  # the last field (17): after all the others
        if item is None:
            continue
        data = _part(item, entry)
        out += (_MANAGED_TAG, _varint(len(data)), data)
    return b"".join(out)


def encode(obj: dict[str, Any], m: Message) -> bytes:
    """codec.encode(obj, m), with the parts of it seen before not encoded again."""
    plan = _plan(m)
    if plan is None or obj.__class__ is not dict:
        return codec.encode(obj, m)
    out: list[bytes] = []
    plain: dict[str, Any] = {}
    for f, how in plan:
        value = obj.get(f.name)
        if value is None:
            continue
        if how == _STRINGS and value.__class__ is dict:
            written: list[bytes] = []
            if _string_map(written, f.tag, value):  # ConfigMap's and Secret's data
                if plain:
                    out.append(codec.encode(plain, m))
                    plain = {}
                out += written
                continue
        if how <= _STRINGS or value.__class__ is not dict:
            plain[f.name] = value
            continue
        if plain:
            out.append(codec.encode(plain, m))
            plain = {}
        assert f.message is not None
        data = _metadata(value, f.message) if how == _META else _part(value, f.message)
        out += (f.tag, _varint(len(data)), data)
    if plain:
        out.append(codec.encode(plain, m))
    return b"".join(out)


def _sized(data: bytes, rev: int, api_version: str, kind: str, obj: Any) -> bytes:
    """The message of the object stored as `data` at `rev`, its length first."""
    if rev:
        found = _answers.items.get(rev) or _recent.items.get(rev)
        if (
            found is not None
            and found[0] == len(data)
            and found[1] == hash(data)  # computed once per bytes object, then kept by it
            and found[2] == api_version
            and found[3] == kind
        ):
            return found[4]  # type: ignore[no-any-return]
    created = obj is not None
    if obj is None:
        obj = jsoncodec.loads(data)
        if rev:
            meta = obj.setdefault("metadata", {})
            if meta.__class__ is dict:
                meta["resourceVersion"] = str(rev)
    raw = encode(obj, _message(api_version, kind))
    sized = _varint(len(raw)) + raw
    if rev:
        kept = _recent if created else _answers
        kept.put(rev, (len(data), hash(data), api_version, kind, sized), len(sized))
    return sized


_heads: dict[tuple[str, str], bytes] = {}  # the envelope up to its raw's length
_events: dict[str, bytes] = {}  # a WatchEvent up to its object's length


def _head(api_version: str, kind: str) -> bytes:
    found = _heads.get((api_version, kind))
    if found is None:
        found = _heads[(api_version, kind)] = envelope.head(api_version, kind) + b"\x12"
    return found


def _message(api_version: str, kind: str) -> Message:
    m = _kinds.get((api_version, kind))
    if m is None:
        m = _kinds[(api_version, kind)] = message_of(api_version, kind)
    return m


def document(
    data: bytes, rev: int, api_version: str, kind: str, obj: dict[str, Any] | None = None
) -> bytes:
    """The protobuf document of the object stored as `data` at revision `rev`
    (0: not stored, nothing cached). `obj`: that object already decoded, its
    resourceVersion in (a create's own, whose answer is kept among the recent
    creates'), spared a decode when not cached."""
    sized = _sized(data, rev, api_version, kind, obj)
    return b"".join((_head(api_version, kind), sized, _TAIL))


def watch_frame(event_type: str, data: bytes, rev: int, api_version: str, kind: str) -> bytes:
    """envelope.watch_frame(event_type, document(...)) in one join: the 4-byte
    length, WatchEvent {type = 1, object = 2 RawExtension {raw = 1}}."""
    sized = _sized(data, rev, api_version, kind, None)
    head = _head(api_version, kind)
    start = _events.get(event_type)
    if start is None:
        name = event_type.encode()
        start = _events[event_type] = b"\n" + _varint(len(name)) + name + b"\x12"
    size = len(head) + len(sized) + len(_TAIL)
    inner = _varint(size)
    raw = 1 + len(inner) + size
    outer = _varint(raw)
    length = (len(start) + len(outer) + raw).to_bytes(4, "big")
    return b"".join((length, start, outer, b"\n", inner, head, sized, _TAIL))


def list_document(
    items: list[tuple[bytes, int]], list_meta: dict[str, Any], api_version: str, kind: str
) -> bytes:
    """`<kind>List` {metadata = 1, items = 2} of stored objects."""
    list_message = message_of(api_version, f"{kind}List")
    meta_field = list_message.by_name["metadata"]
    assert meta_field.message is not None
    meta = codec.encode(list_meta, meta_field.message)
    out = [meta_field.tag, _varint(len(meta)), meta]
    tag = list_message.by_name["items"].tag
    for data, rev in items:
        out += (tag, _sized(data, rev, api_version, kind, None))
    return envelope.wrap(api_version, f"{kind}List", b"".join(out))
