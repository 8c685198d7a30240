"""Encoding through the C protobuf runtime (upb), for the answers a server writes.

Writing a message field by field in Python costs more than JSON's whole
path; protobuf's own runtime writes it in C. At first use the compiled
table (schema.py) becomes a descriptor pool built at run time (no
generated code: one FileDescriptorProto of every message, fields named by
their JSON names), and each object is handed to its message class's
constructor, which builds the message from dicts and lists in C. Only the
values whose JSON form is not the message's own are rewritten first, by a
per-message plan that walks just the fields leading to them: times to
{seconds, nanos}, quantities to {string}, IntOrString to {type, intVal,
strVal}, base64 to bytes, RawExtension and FieldsV1 to their JSON bytes,
structs Go inlines into their own field, and every map to its entries
sorted by key. A map field is declared as repeated entry messages (the same
bytes on the wire), not as a protobuf map: upb writes a map in its hash
order, or with `deterministic` in an order of its own ("ab" before "a"),
and Kubernetes' generated code writes the entries ascending by key
(sort.Strings), which a list keeps.

`encode` answers None when the runtime is not the C one, or the object has
a key or a value its message cannot take: the caller then uses codec.encode,
which skips such values, so every object still gets an answer.
"""

from __future__ import annotations

import base64
import threading
from functools import lru_cache
from typing import Any

from controlplane.api import jsoncodec
from controlplane.api.k8sproto import schema
from controlplane.api.k8sproto.duration import parse_duration
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
    SINGLE,
    STRING,
    TIME,
    Field,
    Message,
)
from machinery import rfc3339

INLINE = "inline_"  # the descriptor's name of a field Go inlines (its JSON name is "")
_lock = threading.Lock()
_classes: dict[str, Any] | None = None
_plans: dict[str, dict[str, Field]] = {}
_disabled = False
_TYPE_META = frozenset({"kind", "apiVersion"})


def _proto_name(name: str) -> str:
    return name.replace("/", "_").replace(".", "_")


def _build() -> dict[str, Any] | None:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from google.protobuf.internal import api_implementation

    if api_implementation.Type() != "upb":
        return None  # the pure-Python runtime is no faster than codec.encode
    kind = descriptor_pb2.FieldDescriptorProto
    scalar = {STRING: kind.TYPE_STRING, BYTES: kind.TYPE_BYTES, BOOL: kind.TYPE_BOOL,
              INT: kind.TYPE_INT64}  # fmt: skip
    file = descriptor_pb2.FileDescriptorProto(
        name="skiff/k8sproto_runtime.proto", package="skiffk8s", syntax="proto2"
    )
    compiled = schema.messages()
    for name, message in compiled.items():
        proto = file.message_type.add(name=_proto_name(name))
        for f in message.fields:
            field = proto.field.add(name=f.name or INLINE, number=f.number)
            field.label = kind.LABEL_OPTIONAL if f.mode == SINGLE else kind.LABEL_REPEATED
            target = field
            if f.mode == MAP:  # repeated entries, not a map: upb keeps their order
                entry = proto.nested_type.add(name=f"Entry{f.number}")
                entry.field.add(name="key", number=1, type=kind.TYPE_STRING,
                                label=kind.LABEL_OPTIONAL)  # fmt: skip
                target = entry.field.add(name="value", number=2, label=kind.LABEL_OPTIONAL)
                field.type = kind.TYPE_MESSAGE
                field.type_name = f".skiffk8s.{proto.name}.{entry.name}"
            if f.message is not None:
                target.type = kind.TYPE_MESSAGE
                target.type_name = f".skiffk8s.{_proto_name(f.message.name)}"
            else:
                target.type = scalar[f.code]
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {
        name: message_factory.GetMessageClass(
            pool.FindMessageTypeByName(f"skiffk8s.{_proto_name(name)}")
        )
        for name in compiled
    }


def _plan(m: Message, seen: frozenset[str] = frozenset()) -> dict[str, Field]:
    """The fields of `m` whose values must be rewritten (or lead to such)."""
    found = _plans.get(m.name)
    if found is not None:
        return found
    plan: dict[str, Field] = {}
    for f in m.fields:
        if f is m.inline:
            continue
        sub = f.message
        if (
            f.mode == MAP
            or f.code == BYTES
            or f.code > MESSAGE
            or (
                sub is not None
                and sub.name not in seen
                and (_plan(sub, seen | {m.name}) or sub.inline is not None)
            )
        ):
            plan[f.name] = f
    _plans[m.name] = plan
    return plan


def classes() -> dict[str, Any] | None:
    global _classes, _disabled
    if _classes is None and not _disabled:
        with _lock:
            if _classes is None and not _disabled:
                try:
                    _classes = _build()
                except Exception:  # an old runtime without these APIs: codec.encode
                    _classes = None
                _disabled = _classes is None
    return _classes


def encode(obj: Any, message: Message) -> bytes | None:
    """The message's bytes for `obj`, written in C; None to fall back."""
    found = classes()
    if found is None:
        return None
    if "kind" in obj or "apiVersion" in obj:  # the envelope's, not the message's
        by_name = message.by_name
        obj = {k: v for k, v in obj.items() if k in by_name or k not in _TYPE_META}
    try:
        data: bytes = found[message.name](**_prepare(obj, message)).SerializeToString()
    except (ValueError, TypeError, KeyError, AttributeError):
        return None  # a key or value the message cannot take
    return data


@lru_cache(maxsize=8192)
def _time(text: str) -> dict[str, int]:
    seconds, nanos = divmod(rfc3339.parse_nano(text), 1_000_000_000)
    return {"seconds": seconds, "nanos": nanos} if nanos else {"seconds": seconds}


def time_of(text: str) -> dict[str, int]:
    """An RFC 3339 time as Time's {seconds, nanos} (nanos only when not 0);
    ValueError when it is not one. The answer is shared: read it only."""
    return _time(text)


def _duration(value: Any) -> dict[str, int]:
    nanos = parse_duration(value) if isinstance(value, str) else None
    if nanos is None:
        raise ValueError(f"{value!r} is not a duration")
    return {"duration": nanos}


def _ident(m: Message) -> str:
    return "p_" + _proto_name(m.name)


def _expr(f: Field, var: str) -> str:
    """The expression of field f's value `var` as its message takes it."""
    code = f.code
    if code == MESSAGE:
        assert f.message is not None
        return f"{_ident(f.message)}({var})"
    if code in (TIME, MICRO_TIME):
        return f"_time({var})"
    if code == QUANTITY:
        return f'{{"string": {var} if {var}.__class__ is str else str({var})}}'
    if code == INT_OR_STRING:
        return (f'({{"type": 1, "strVal": {var}}} if {var}.__class__ is str '
                f'else {{"type": 0, "intVal": {var}}})')  # fmt: skip
    if code == BYTES:
        return f"_b64decode({var}, validate=True)"
    if code == RAW:
        return f'{{"raw": _dumps({var})}}'
    if code == FIELDS_V1:
        return f'{{"Raw": _dumps({var})}}'
    if code == ARRAY:
        return f'{{"items": {var}}}'
    if code == DURATION:
        return f"_duration({var})"
    return var


def _source(m: Message, names: dict[str, object]) -> str:
    lines = [f"def {_ident(m)}(obj):", "    out = dict(obj)"]
    for name, f in _plan(m).items():
        key = repr(name)
        lines.append(f"    v = obj.get({key})")
        if f.mode == SINGLE and f.code in (TIME, MICRO_TIME):
            lines += ["    if v:", f"        out[{key}] = _time(v)",
                      f"    elif {key} in out:", f"        del out[{key}]"]  # fmt: skip
            continue
        if f.mode == SINGLE:
            value = _expr(f, "v")
        elif f.mode == REPEATED:
            value = f"[{_expr(f, 'x')} for x in v]"
        else:  # Go's order: entries by key, ascending (Python's str order is UTF-8's)
            value = (f"[{{'key': k, 'value': {_expr(f, 'x')}}} "
                     "for k, x in sorted(v.items()) if x is not None]")  # fmt: skip
        lines += ["    if v is not None:", f"        out[{key}] = {value}",
                  f"    elif {key} in out:", f"        del out[{key}]"]  # fmt: skip
    inline = m.inline
    if inline is not None and inline.message is not None:
        known = f"N{len(names)}"
        names[known] = frozenset(m.by_name)
        sub = (f"{_ident(inline.message)}(moved)"
               if _plan(inline.message) or inline.message.inline else "moved")  # fmt: skip
        lines += [f"    moved = {{k: out.pop(k) for k in list(out) if k not in {known}}}",
                  "    if moved:", f"        out[{INLINE!r}] = {sub}"]  # fmt: skip
    lines.append("    return out")
    return "\n".join(lines) + "\n"


_preparers: dict[str, Any] = {}


def _preparer(m: Message) -> Any:
    """The compiled function that rewrites an object of message `m`."""
    found = _preparers.get(m.name)
    if found is not None:
        return found
    with _lock:
        todo: list[Message] = []
        stack, seen = [m], set()
        while stack:
            message = stack.pop()
            if message.name in seen or message.name in _preparers:
                continue
            seen.add(message.name)
            if _plan(message) or message.inline is not None:
                todo.append(message)
            stack += [f.message for f in message.fields if f.message is not None]
        names: dict[str, object] = {}
        source = "".join(_source(message, names) for message in todo)
        scope: dict[str, Any] = {
            "_time": _time, "_duration": _duration, "_dumps": jsoncodec.dumps,
            "_b64decode": base64.b64decode, **names,
            **{_ident(schema.message(n)): f for n, f in _preparers.items() if f is not _identity},
        }  # fmt: skip
        exec(compile(source, f"<k8sproto prepare {m.name}>", "exec"), scope)
        for message in todo:
            _preparers[message.name] = scope[_ident(message)]
        for name in seen:
            _preparers.setdefault(name, _identity)
    return _preparers[m.name]


def _identity(obj: Any) -> Any:
    return obj


def _prepare(obj: dict[str, Any], m: Message) -> dict[str, Any]:
    """`obj` with the values its message's plan names rewritten (shallow
    copies of the dicts on the way), or `obj` itself when nothing needs it."""
    result: dict[str, Any] = _preparer(m)(obj)
    return result


__all__ = ["INLINE", "REPEATED", "classes", "encode"]
