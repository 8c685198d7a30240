"""Decoders compiled per message: the table made into Python code at run time.

codec.py's reader looks each field up in a table as it goes; here each
message gets a function of its own whose field dispatch is a chain of
integer comparisons on the wire key and whose actions are written out
(a string kept or dropped at its zero value, a sub-message's decoder
called by name), so a field costs a few bytecodes instead of attribute
and dictionary lookups. The code is generated from the compiled table
(schema.py) at first use of a message, for it and every message it
reaches; it reads exactly what codec's reader reads, with the same checks
(lengths against what is left, nesting, UTF-8) and the same errors, which
tests/fuzz/k8s_protobuf.py holds them to.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from typing import Any

from controlplane.api.k8sproto import codec, reused
from controlplane.api.k8sproto.codec import MAX_NESTING, ProtobufError
from controlplane.api.k8sproto.schema import (
    BOOL,
    BYTES,
    INT,
    INT_OR_STRING,
    MAP,
    MESSAGE,
    QUANTITY,
    REPEATED,
    SINGLE,
    STRING,
    Field,
    Message,
)

Decoder = Callable[[bytes, int, int, int], Any]

_lock = threading.Lock()
_namespace: dict[str, Any] = {}
_U64 = 1 << 64
_I63 = 1 << 63
_OBJECT_META = "meta/v1.ObjectMeta"


def _past(names: dict[int, str], key: int, size: int, left: int) -> None:
    name = names.get(key) or f"field {key >> 3}"
    raise ProtobufError(f"{name}: length {size} past the end of the message ({left} bytes left)")


def _utf8(name: str) -> None:
    raise ProtobufError(f"{name}: not valid UTF-8")


def _deep() -> None:
    raise ProtobufError(f"messages nested more than {MAX_NESTING} deep")


def _ident(m: Message, prefix: str = "d_") -> str:
    return prefix + m.name.replace("/", "_").replace(".", "_")


def _length_delimited(
    f: Field, key: int, m: Message, names: dict[str, object], top: bool = False
) -> list[str]:
    """The lines (at 16 spaces) that take field f's value at buf[pos:stop];
    `top`: m is a whole body's, whose sub-objects may be reused (reused.py)."""
    name = repr(f.name)
    field_ref = f"F{len(names)}"
    names[field_ref] = f
    if key == f.packed_tag:
        conv = "v != 0" if f.code == BOOL else "(v - _U64 if v >= _I63 else v)"
        return [f"items = out.setdefault({name}, [])",
                "p = pos",
                "while p < stop:",
                "    v, p = _varint(buf, p, stop)",
                f"    items.append({conv})"]  # fmt: skip
    if f.mode == MAP:
        if f.code not in (STRING, QUANTITY):
            return [f"k, v = _entry(buf, pos, stop, {field_ref}, depth)",
                    f"out.setdefault({name}, {{}})[k] = v"]  # fmt: skip
        # map<string, string|Quantity> (labels, resources): the usual entry
        # {key = 1, value = 2 (Quantity {string = 1})} read at once.
        inner = "v0 = kend + 2" if f.code == STRING else (
            "v0 = kend + 4 if stop - kend > 3 and buf[kend + 2] == 10 "
            "and buf[kend + 3] == stop - kend - 4 else -1")  # fmt: skip
        return ["kend = pos + 2 + buf[pos + 1] if stop - pos > 3 and buf[pos] == 10 "
                "and buf[pos + 1] < 128 else -1",
                "v0 = -1",
                "if 0 < kend < stop - 1 and buf[kend] == 18 and buf[kend + 1] == stop - kend - 2:",
                f"    {inner}",
                "if v0 > 0:",
                "    try:",
                f"        out.setdefault({name}, {{}})[buf[pos + 2 : kend].decode()] = "
                "buf[v0:stop].decode()",
                "    except UnicodeDecodeError:",
                f"        _utf8({name})",
                "else:",
                f"    k, v = _entry(buf, pos, stop, {field_ref}, depth)",
                f"    out.setdefault({name}, {{}})[k] = v"]  # fmt: skip
    code = f.code
    if code == STRING:
        value = ["try:", "    v = buf[pos:stop].decode()",
                 "except UnicodeDecodeError:", f"    _utf8({name})"]  # fmt: skip
    elif code == BYTES:
        value = ["v = _b64(buf[pos:stop]).decode()"]
    elif code == MESSAGE:
        assert f.message is not None
        value = [f"v = {_ident(f.message)}(buf, pos, stop, depth + 1)"]
        if top and f.mode == SINGLE and f is not m.inline and f.message.name != _OBJECT_META:
            value = [f"v = _part({_ident(f.message)}, buf, pos, stop, depth + 1)"]
    else:
        assert f.message is not None
        message_ref = f"M{len(names)}"
        names[message_ref] = f.message
        value = [f"v = _message(buf, pos, stop, {message_ref}, depth + 1)"]
        if code == QUANTITY:  # the usual {string = 1}, read at once
            value = ["if stop - pos > 1 and buf[pos] == 10 and buf[pos + 1] == stop - pos - 2:",
                     "    try:", "        v = buf[pos + 2 : stop].decode()",
                     "    except UnicodeDecodeError:", f"        _utf8({name})",
                     "else:", f"    {value[0]}"]  # fmt: skip
    if f.mode == REPEATED:
        return [*value, f"out.setdefault({name}, []).append(v)"]
    if f is m.inline:
        return [*value, "out.update(v)"]
    if code >= MESSAGE and code != INT_OR_STRING:
        keep = "v is not None" if code != MESSAGE else ""
    elif f.pointer:
        keep = "v is not None"
    elif code in (STRING, BYTES):
        keep = "v"  # a str: "" is Go's unset
    else:
        keep = 'v is not None and v != "" and v != 0'  # Go's unset
    return [*value, f"if {keep}:" if keep else "if True:", f"    out[{name}] = v"]


def _varint_field(f: Field) -> list[str]:
    name = repr(f.name)
    value = "v = value != 0" if f.code == BOOL else "v = value - _U64 if value >= _I63 else value"
    if f.mode == REPEATED:
        return [value, f"out.setdefault({name}, []).append(v)"]
    if f.mode == MAP:  # pragma: no cover - maps are length-delimited
        return []
    keep = "True" if f.pointer else "v"
    return [value, f"if {keep}:", f"    out[{name}] = v"]


def _source(m: Message, names: dict[str, object], top: bool = False) -> str:
    key_names = f"K{len(names)}"
    names[key_names] = {key: f.name or m.name for key, f in m.by_key.items()}
    lines = [
        f"def {_ident(m, 'top_' if top else 'd_')}(buf, pos, end, depth):",
        "    if depth > MAX_NESTING:",
        "        _deep()",
        "    out = {}",
        "    while pos < end:",
        "        key = buf[pos]",
        "        if key < 128:",
        "            pos += 1",
        "        else:",
        "            key, pos = _varint(buf, pos, end)",
        "        wire = key & 7",
        "        if wire == 2:",
        "            if pos >= end:",
        f"                raise ProtobufError({m.name + ': truncated length'!r})",
        "            size = buf[pos]",
        "            if size < 128:",
        "                pos += 1",
        "            else:",
        "                size, pos = _varint(buf, pos, end)",
        "            stop = pos + size",
        "            if stop > end:",
        f"                _past({key_names}, key, size, end - pos)",
    ]
    word = "if"
    for key, f in sorted(m.by_key.items(), key=lambda kv: kv[1].number):
        if key & 7 != 2:
            continue
        lines.append(f"            {word} key == {key}:")
        lines += [" " * 16 + line for line in _length_delimited(f, key, m, names, top)]
        word = "elif"
    lines += ["            pos = stop",
              "        elif wire == 0:",
              "            value = buf[pos] if pos < end else 128",
              "            if value < 128:",
              "                pos += 1",
              "            else:",
              "                value, pos = _varint(buf, pos, end)"]  # fmt: skip
    word = "if"
    for key, f in sorted(m.by_key.items(), key=lambda kv: kv[1].number):
        if key & 7 != 0 or f.code not in (BOOL, INT) or f.mode == MAP:
            continue
        lines.append(f"            {word} key == {key}:")
        lines += [" " * 16 + line for line in _varint_field(f)]
        word = "elif"
    lines += ["        else:", "            pos = _skip(buf, pos, end, key)", "    return out"]
    return "\n".join(lines) + "\n"


def _reachable(m: Message) -> list[Message]:
    found: dict[str, Message] = {}
    stack = [m]
    while stack:
        message = stack.pop()
        if message.name in found or message.special != MESSAGE:
            continue
        found[message.name] = message
        stack += [f.message for f in message.fields if f.message is not None]
    return list(found.values())


def decoder(m: Message, top: bool = False) -> Decoder:
    """The compiled decoder of message `m` (a plain message, not a special);
    `top`: the decoder of a whole body of m, whose large sub-objects but
    its metadata are reused when their bytes were seen before (reused.py)."""
    ident = _ident(m, "top_" if top else "d_")
    found = _namespace.get(ident)
    if found is not None:
        return found  # type: ignore[no-any-return]
    with _lock:
        if not _namespace:
            _namespace.update(
                _varint=codec._varint, _skip=codec._skip, _entry=codec._entry,
                _message=codec._message, _b64=base64.b64encode, ProtobufError=ProtobufError,
                MAX_NESTING=MAX_NESTING, _past=_past, _utf8=_utf8, _deep=_deep,
                _U64=_U64, _I63=_I63, _part=reused.part,
            )  # fmt: skip
        names: dict[str, object] = {}
        scope = dict(_namespace)
        # One message at a time: a small syntax tree each, not one for all.
        todo = [(message, False) for message in _reachable(m)] + ([(m, True)] if top else [])
        for message, whole in todo:
            if _ident(message, "top_" if whole else "d_") in _namespace:
                continue
            source = _source(message, names, whole)
            scope.update(names)
            exec(compile(source, f"<k8sproto {message.name}>", "exec"), scope)
        for key, value in scope.items():
            if key.startswith(("d_", "top_")) and key not in _namespace:
                _namespace[key] = value
    return _namespace[ident]  # type: ignore[no-any-return]


__all__ = ["MAP", "SINGLE", "Decoder", "decoder"]
