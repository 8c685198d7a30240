"""Whether a patched object of a built-in kind can be read back into its
types, as Kubernetes' unstructured converter restores a strategic-merge-
patched map into the kind's Go struct, and its error when it cannot:
`metadata.labels` patched to a string is `cannot restore map from string`,
`spec` to a list `cannot restore struct from: slice`, `spec.containers` to
an object `cannot restore slice from map`.

`restore_error(obj)` walks the schema types (kinds.schema_types(), as
pruning does) and answers the first such error (None: it restores).
`go_value(v)` writes a decoded JSON value as Go's `%+v` does
(`map[metadata:map[labels:invalid]]`), the form Kubernetes quotes the patch
in. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.kinds.registry import schema_types
from controlplane.api.pruning import type_of

Object = dict[str, Any]


def go_kind(value: Any) -> str:
    """The Go reflect.Kind of a value decoded from JSON into interface{}."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "slice"
    return "map"


def go_value(value: Any) -> str:
    """Go's `%+v` of a JSON value decoded into interface{} (map keys sorted)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_value(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    return str(value)


def restore_error(obj: Object) -> str | None:
    """The converter's error restoring `obj` into its kind's types (None: none)."""
    name = type_of(obj)
    return None if name is None else _struct(name, obj)


def _struct(name: str, value: Any) -> str | None:
    if not isinstance(value, dict):
        return f"cannot restore struct from: {go_kind(value)}"
    fields = schema_types()[name].fields
    for field, (expr, _description) in fields.items():
        found = value.get(field)
        if found is not None:
            problem = _field(expr, found)
            if problem is not None:
                return problem
    return None


def _field(expr: str, value: Any) -> str | None:
    types = schema_types()
    if expr.startswith("[]"):
        if not isinstance(value, list):
            return f"cannot restore slice from {go_kind(value)}"
        inner = expr[2:]
        if inner in types:
            for item in value:
                if item is not None and (problem := _struct(inner, item)) is not None:
                    return problem
        return None
    if expr == "map" or (expr.startswith("map[") and expr.endswith("]")):
        if not isinstance(value, dict):
            return f"cannot restore map from {go_kind(value)}"
        inner = expr[4:-1] if expr != "map" else ""
        if inner in types:
            for item in value.values():
                if item is not None and (problem := _struct(inner, item)) is not None:
                    return problem
        return None
    if expr in types:
        return _struct(expr, value)
    return None
