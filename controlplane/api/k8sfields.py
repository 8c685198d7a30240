"""The fields Kubernetes' own types have, from its messages, for finding the
unknown fields of a built-in kind's object at any depth.

kube-apiserver decodes a built-in kind into Go structs, so a field those
structs lack is unknown wherever it is, and one they have is known even
where skiff's schema (kinds.schema_types()) leaves a structure free-form
(`object`) or does not list the field. The structs' fields are the
messages of k8sproto/schema.py (facts from k8s.io/api's generated.proto),
compiled at the first question:

- `message_of(type_name)`: Kubernetes' message of a schema type (None for
  types Kubernetes has no message of: CRDs, skiff's PodGroup, metrics);
- `field_of(message, key)`: the field with JSON name `key` of a message or
  of a message it inlines (EphemeralContainer's EphemeralContainerCommon);
- `unknown_below(field, value, path, out, drop)`: the paths of the unknown
  fields below a field's value, appended to `out` in document order, and
  removed from `value` when `drop`.

openapi.validate reports what these find and pruning.prune drops it, so a
warning names exactly what is not stored. Pure: no I/O.
"""

from __future__ import annotations

import functools
from typing import Any

from controlplane.api.k8sproto.schema import MESSAGE, REPEATED, SINGLE, Field, Message, messages
from controlplane.api.kinds.registry import schema_types


@functools.cache
def message_of(type_name: str) -> Message | None:
    """Kubernetes' message of a schema type, by its OpenAPI definition name."""
    return _by_definition().get(schema_types()[type_name].full_name(type_name))


@functools.cache
def _by_definition() -> dict[str, Message]:
    from controlplane.api.openapi_model import definition_name

    return {definition_name(name): m for name, m in messages().items()}


def field_of(message: Message, key: str) -> Field | None:
    """The field JSON calls `key` in `message` or a message it inlines."""
    while True:
        found = message.by_name.get(key)
        if found is not None:
            return found
        if message.inline is None or message.inline.message is None:
            return None
        message = message.inline.message


def names(message: Message) -> frozenset[str]:
    """Every JSON field name of `message` and of the messages it inlines."""
    out: set[str] = set()
    current: Message | None = message
    while current is not None:
        out.update(f.name for f in current.fields if f.name)
        inline = current.inline
        current = inline.message if inline is not None else None
    return frozenset(out)


def unknown_below(field: Field, value: Any, path: str, out: list[str], drop: bool) -> None:
    """The unknown fields inside `value`, the value of `field` at `path`: in
    a nested message, a list or a map of them (scalars and the messages with
    their own JSON, such as a RawExtension or FieldsV1, hold none)."""
    inner = field.message
    if field.code != MESSAGE or inner is None:
        return
    if field.mode == SINGLE:
        if isinstance(value, dict):
            _walk(inner, value, path, out, drop)
    elif field.mode == REPEATED:
        if isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    _walk(inner, item, f"{path}[{i}]", out, drop)
    elif isinstance(value, dict):  # map<string, message>
        for key, item in value.items():
            if isinstance(item, dict):
                _walk(inner, item, f"{path}.{key}", out, drop)


def _walk(message: Message, value: dict[str, Any], path: str, out: list[str], drop: bool) -> None:
    by_name = message.by_name
    unknown: list[str] = []
    for key, child in value.items():
        found = by_name.get(key) or field_of(message, key)
        if found is None:
            out.append(f"{path}.{key}")
            unknown.append(key)
        elif child is not None and found.code == MESSAGE:
            unknown_below(found, child, f"{path}.{key}", out, drop)
    if drop:
        for key in unknown:
            del value[key]
