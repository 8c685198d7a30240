"""Whether a patched object of a built-in kind can be read back into its
types, as Kubernetes reads a patched object into the kind's Go struct, and
the error it gives when it cannot. A strategic merge patch's map goes through
the unstructured converter (`metadata.labels` patched to a string: `cannot
restore map from string`; `spec` to a list: `cannot restore struct from:
slice`; `spec.containers` to an object: `cannot restore slice from map`); a
JSON merge patch's bytes through the JSON decoder (`json: cannot unmarshal
string into Go struct field ObjectMeta.metadata.labels of type
map[string]string`).

`mismatch(obj)` walks the schema types (kinds.schema_types(), as pruning
does) to the first field whose value has the wrong shape (a map, list or
structure where the type wants another); `go_value(v)` writes a decoded
JSON value as Go's `%+v` does (`map[metadata:map[labels:invalid]]`), the
form Kubernetes quotes a strategic merge patch in. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controlplane.api.kinds.registry import schema_types
from controlplane.api.pruning import type_of

Object = dict[str, Any]


@dataclass(frozen=True)
class Mismatch:
    struct: str  # the Go struct holding the field (ObjectMeta)
    path: tuple[str, ...]  # JSON names from the object's root, no indexes
    value: Any
    want: str  # map, slice or struct
    go_type: str  # map[string]string, []v1.Container, v1.PodSpec

    def converter_error(self) -> str:
        """runtime.DefaultUnstructuredConverter's words."""
        sep = ": " if self.want == "struct" else " "
        return f"cannot restore {self.want} from{sep}{go_kind(self.value)}"

    def decoder_error(self) -> str:
        """encoding/json's UnmarshalTypeError."""
        return (
            f"json: cannot unmarshal {json_kind(self.value)} into Go struct field "
            f"{self.struct}.{'.'.join(self.path)} of type {self.go_type}"
        )


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
    return "slice" if isinstance(value, list) else "map"


def json_kind(value: Any) -> str:
    """The JSON type as encoding/json names it in an unmarshal error."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


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


def mismatch(obj: Object) -> Mismatch | None:
    """The first field of `obj` its kind's types cannot hold (None: none)."""
    name = type_of(obj)
    return None if name is None else _struct(name, obj, ())


def _go_name(name: str) -> str:
    t = schema_types()[name]
    return f"{t.package.rsplit('.', 1)[-1]}.{t.name or name}"


def _go_type(expr: str) -> str:
    types = schema_types()
    if expr.startswith("[]"):
        inner = expr[2:]
        return "[]" + (_go_name(inner) if inner in types else "interface {}")
    if expr == "map":
        return "map[string]string"
    if expr.startswith("map["):
        inner = expr[4:-1]
        return "map[string]" + (_go_name(inner) if inner in types else "interface {}")
    return _go_name(expr)


def _struct(name: str, value: Object, path: tuple[str, ...]) -> Mismatch | None:
    go_struct = schema_types()[name].name or name
    for field, (expr, _description) in schema_types()[name].fields.items():
        found = value.get(field)
        if found is not None:
            problem = _field(go_struct, expr, found, (*path, field))
            if problem is not None:
                return problem
    return None


def _field(go_struct: str, expr: str, value: Any, path: tuple[str, ...]) -> Mismatch | None:
    types = schema_types()
    if expr.startswith("[]"):
        if not isinstance(value, list):
            return Mismatch(go_struct, path, value, "slice", _go_type(expr))
        inner = expr[2:]
        if inner in types:
            for item in value:
                if item is not None and (found := _field(go_struct, inner, item, path)):
                    return found
        return None
    if expr == "map" or (expr.startswith("map[") and expr.endswith("]")):
        if not isinstance(value, dict):
            return Mismatch(go_struct, path, value, "map", _go_type(expr))
        inner = expr[4:-1] if expr != "map" else ""
        if inner in types:
            for item in value.values():
                if item is not None and (found := _field(go_struct, inner, item, path)):
                    return found
        return None
    if expr in types:
        if not isinstance(value, dict):
            return Mismatch(go_struct, path, value, "struct", _go_type(expr))
        return _struct(expr, value, path)
    return None
