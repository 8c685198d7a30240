"""Dropping the fields a built-in kind does not have, as Kubernetes does when
it decodes a request into its Go structs: `spec.foo`,
`spec.containers[0].imagePolicy`, `spec.strategy.rollingUpdate.bogus` or a
stray top-level key never reach storage, whatever `fieldValidation` says.

`prune(obj)` removes them in place and returns their paths
(`spec.containers[0].foo`); the REST front door words the same paths
(openapi.validate) as warnings or refusals first; gRPC writes are pruned
silently. A field is known when the kind's schema (kinds.schema_types(),
the one the OpenAPI documents read) or Kubernetes' message of the type
(k8sfields.py) has it: below the structures the schema leaves free-form
(`object`: status, a strategy, a probe's handler) and the fields of
Kubernetes' types the schema does not list, the message decides. Kinds
neither describes are left alone. Custom resources are pruned by their
CRD's structural schema (crd.default_object).

The walk visits only the typed structures an object has (a pod: about a
dozen maps), with one set difference per map, so every write can afford it.
Pure: no I/O.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from controlplane.api import k8sfields
from controlplane.api.jsoncodec import dumps
from controlplane.api.k8sproto.schema import MESSAGE, Field
from controlplane.api.kinds.registry import kind_types, schema_types

Object = dict[str, Any]

_ONE, _LIST, _MAP = 0, 1, 2


class _Shape(NamedTuple):
    """One type of the schema, ready for the walk: the fields it knows (its
    own and its Kubernetes message's), those holding another declared type
    (field, _ONE/_LIST/_MAP, type name), and those whose insides only
    Kubernetes' message describes (free-form in the schema, or not in it)."""

    known: frozenset[str]
    typed: tuple[tuple[str, int, str], ...]
    free: tuple[tuple[str, Field], ...]


def _typed(expr: str) -> tuple[int, str] | None:
    """(shape, type name) when a field expression holds declared types."""
    if expr.startswith("[]"):
        shape, name = _LIST, expr[2:]
    elif expr.startswith("map[") and expr.endswith("]"):
        shape, name = _MAP, expr[4:-1]
    else:
        shape, name = _ONE, expr
    return (shape, name) if name in schema_types() else None


@functools.cache
def _shapes() -> dict[str, _Shape]:
    out: dict[str, _Shape] = {}
    for name, t in schema_types().items():
        typed, free = [], []
        message = k8sfields.message_of(name)
        theirs = k8sfields.names(message) if message is not None else frozenset()
        for field, (expr, _description) in t.fields.items():
            found = _typed(expr)
            if found is not None:
                typed.append((field, *found))
        for field in sorted(theirs):
            if field in t.fields and t.fields[field][0].removeprefix("[]") != "object":
                continue
            assert message is not None
            of = k8sfields.field_of(message, field)
            if of is not None and of.code == MESSAGE:
                free.append((field, of))
        out[name] = _Shape(frozenset(t.fields) | theirs, tuple(typed), tuple(free))
    return out


def type_of(obj: Object) -> str | None:
    """The schema type of an object, by its apiVersion and kind (None: not described)."""
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    return kind_types().get((group, version, str(obj.get("kind", ""))))


def prune(obj: Object, stored: Object | None = None) -> list[str]:
    """Remove the unknown fields of a built-in kind's object in place; their
    paths. `stored`: the object as stored before this write, whose parts
    `obj` left unchanged are known to hold no unknown field (an update that
    changes a label does not walk the spec). A create's spec that an earlier
    create had as it is (one template's pods) is known clean by its JSON."""
    name = type_of(obj)
    removed: list[str] = []
    if name is not None:
        _walk(_shapes(), name, obj, "", removed, stored, top=True)
    return removed


_CLEAN: set[tuple[str, bytes]] = set()  # (type, JSON) of parts found to hold no unknown field
_CLEAN_MAX = 512


def _walk(
    shapes: dict[str, _Shape],
    name: str,
    value: Object,
    path: str,
    out: list[str],
    stored: Object | None = None,
    top: bool = False,
) -> None:
    shape = shapes[name]
    unknown = value.keys() - shape.known
    if unknown:
        for key in sorted(unknown):
            del value[key]
            out.append(f"{path}.{key}" if path else key)
    for field, kind, child_type in shape.typed:
        child = value.get(field)
        if child is None:
            continue
        before = stored.get(field) if stored is not None else None
        if before is not None and before == child:
            continue  # as stored: pruned when it was written
        where = f"{path}.{field}" if path else field
        if kind == _ONE:
            if not isinstance(child, dict):
                continue
            if top and before is None and field != "metadata":
                _walk_shared(shapes, child_type, child, where, out)
            else:
                _walk(shapes, child_type, child, where, out,
                      before if isinstance(before, dict) else None)  # fmt: skip
        elif kind == _LIST:
            if isinstance(child, list):
                for i, item in enumerate(child):
                    if isinstance(item, dict):
                        _walk(shapes, child_type, item, f"{where}[{i}]", out)
        elif isinstance(child, dict):
            for key, item in child.items():
                if isinstance(item, dict):
                    _walk(shapes, child_type, item, f"{where}.{key}", out)
    for field, of in shape.free:
        child = value.get(field)
        if child is None or (stored is not None and stored.get(field) == child):
            continue
        k8sfields.unknown_below(of, child, f"{path}.{field}" if path else field, out, drop=True)


def _walk_shared(
    shapes: dict[str, _Shape], name: str, value: Object, path: str, out: list[str]
) -> None:
    """_walk of a part many objects share (a spec), skipped when one like it was clean."""
    key = (name, dumps(value))
    if key in _CLEAN:
        return
    found = len(out)
    _walk(shapes, name, value, path, out)
    if len(out) == found:
        if len(_CLEAN) >= _CLEAN_MAX:
            _CLEAN.clear()
        _CLEAN.add(key)
