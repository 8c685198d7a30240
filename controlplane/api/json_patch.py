"""JSON Patch (RFC 6902): what `kubectl patch --type=json` sends.

`apply(doc, ops)` returns the patched document and never modifies `doc` or
`ops`. Paths are JSON Pointers (RFC 6901): `/a/b/0`, `~1` for `/`, `~0` for
`~`, and `-` for "after the last element" of a list in `add`, `move` and
`copy`. Any failure raises errors.Invalid naming the operation's index, its
op and path, and what went wrong; a failed `test` fails the whole patch, as
the RFC requires (the operations are applied all or nothing).

Bounded as kube-apiserver bounds it: at most MAX_OPERATIONS operations (the
REST layer refuses more, 413, before applying any), and `copy` may add at
most ACCUMULATED_COPY_SIZE_LIMIT bytes (of JSON) in all, with json-patch's
message (its AccumulatedCopySizeLimit, which kube-apiserver sets to 3 MiB):
each copy doubling a value, thirty of them would otherwise need gigabytes.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.jsoncodec import clone, dumps
from controlplane.client.errors import Invalid

MAX_OPERATIONS = 10_000  # kube-apiserver's maxJSONPatchOperations
ACCUMULATED_COPY_SIZE_LIMIT = 3 * 1024 * 1024  # its JSONPatchMaxCopyBytes

_OPS = ("add", "remove", "replace", "move", "copy", "test")


class _OpError(Exception):
    """A problem inside one operation; `apply` adds which one."""


def parse_pointer(pointer: Any) -> list[str]:
    """The reference tokens of a JSON Pointer ("" is the whole document)."""
    if not isinstance(pointer, str):
        raise _OpError("path must be a string")
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise _OpError(f"path {pointer!r} must start with '/'")
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _index(token: str, size: int, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return size
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise _OpError(f"{token!r} is not a list index")
    i = int(token)
    if i > size or (i == size and not allow_end):
        raise _OpError(f"index {i} is out of range (the list has {size} elements)")
    return i


def _parent(doc: Any, tokens: list[str]) -> Any:
    """The container that holds the value `tokens` points at."""
    node = doc
    for depth, token in enumerate(tokens[:-1]):
        if isinstance(node, dict):
            if token not in node:
                raise _OpError(f"/{'/'.join(tokens[: depth + 1])} does not exist")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(token, len(node), allow_end=False)]
        else:
            raise _OpError(f"/{'/'.join(tokens[:depth])} is not an object or a list")
    if not isinstance(node, (dict, list)):
        raise _OpError(f"/{'/'.join(tokens[:-1])} is not an object or a list")
    return node


def _get(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        return doc
    parent = _parent(doc, tokens)
    token = tokens[-1]
    if isinstance(parent, dict):
        if token not in parent:
            raise _OpError("no value at the path")
        return parent[token]
    return parent[_index(token, len(parent), allow_end=False)]


def _put(doc: Any, tokens: list[str], value: Any, *, insert: bool) -> Any:
    """`value` at `tokens`: inserted into a list (`insert`, as add does) or
    in place of the item there (as replace does); set in an object."""
    if not tokens:
        return value
    parent = _parent(doc, tokens)
    if isinstance(parent, dict):
        parent[tokens[-1]] = value
    elif insert:
        parent.insert(_index(tokens[-1], len(parent), allow_end=True), value)
    else:
        parent[_index(tokens[-1], len(parent), allow_end=False)] = value
    return doc


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    return _put(doc, tokens, value, insert=True)


def _remove(doc: Any, tokens: list[str]) -> tuple[Any, Any]:
    """(the document without the value, the removed value)."""
    if not tokens:
        return None, doc
    parent = _parent(doc, tokens)
    if isinstance(parent, dict):
        if tokens[-1] not in parent:
            raise _OpError("no value at the path")
        return doc, parent.pop(tokens[-1])
    return doc, parent.pop(_index(tokens[-1], len(parent), allow_end=False))


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but true != 1 and object key order does not matter."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and bool(a == b)


def _value(op: dict[str, Any]) -> Any:
    if "value" not in op:
        raise _OpError("missing 'value'")
    return clone(op["value"])


def _from(op: dict[str, Any]) -> list[str]:
    if "from" not in op:
        raise _OpError("missing 'from'")
    return parse_pointer(op["from"])


class _Copies:
    """The bytes `copy` operations added so far."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0

    def add(self, value: Any) -> None:
        self.total += len(dumps(value))
        if self.total > self.limit:
            raise _OpError(
                "Unable to complete the copy, the accumulated size increase of copy is "
                f"{self.total}, exceeding the limit {self.limit}"
            )


def _one(doc: Any, op: dict[str, Any], copies: _Copies) -> Any:
    name = op.get("op")
    if name not in _OPS:
        raise _OpError(f"unknown op {name!r} (one of {', '.join(_OPS)})")
    tokens = parse_pointer(op.get("path"))
    if name == "add":
        return _add(doc, tokens, _value(op))
    if name == "remove":
        return _remove(doc, tokens)[0]
    if name == "replace":
        value = _value(op)
        _get(doc, tokens)  # must exist
        return _put(doc, tokens, value, insert=False)
    if name == "move":
        source = _from(op)
        if tokens[: len(source)] == source and tokens != source:
            raise _OpError("cannot move a value into one of its own children")
        doc, value = _remove(doc, source)
        return _add(doc, tokens, value)
    if name == "copy":
        value = _get(doc, _from(op))
        copies.add(value)  # before the copy is made: its size is what is bounded
        return _add(doc, tokens, clone(value))
    # test
    expected = _value(op)
    if not _equal(_get(doc, tokens), expected):
        raise _OpError("test failed: the value differs")
    return doc


def apply(doc: Any, ops: Any, copy_limit: int = ACCUMULATED_COPY_SIZE_LIMIT) -> Any:
    """`doc` with the RFC 6902 operations `ops` applied; neither is modified."""
    if not isinstance(ops, list):
        raise Invalid("json patch: must be a list of operations")
    result = clone(doc)
    copies = _Copies(copy_limit)
    for i, op in enumerate(ops):
        if not isinstance(op, dict):
            raise Invalid(f"json patch: operation {i}: must be an object")
        try:
            result = _one(result, op, copies)
        except _OpError as exc:
            where = f"operation {i} ({op.get('op')} {op.get('path')!s})"
            raise Invalid(f"json patch: {where}: {exc}") from None
    return result
