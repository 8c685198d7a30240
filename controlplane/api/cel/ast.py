"""The checked CEL expression tree, read from cel-cpp's serialized
CheckedExpr (a protobuf `Any`): enough of google/cel-spec's expr proto for
cost.py to walk (idents, selects, calls, lists, maps, comprehensions)."""

from __future__ import annotations

from dataclasses import dataclass, field

# cel.expr.Expr field numbers (cel-spec syntax.proto)
_IDENT, _SELECT, _CALL, _LIST, _STRUCT, _COMPREHENSION = 4, 5, 6, 7, 8, 9


@dataclass
class Node:
    kind: str  # const | ident | select | call | list | struct | comprehension
    name: str = ""  # ident name, selected field or function
    children: list[Node] = field(default_factory=list)
    target: Node | None = None  # a select's operand or a member call's receiver
    # comprehension parts
    iter_var: str = ""
    iter_range: Node | None = None
    accu_init: Node | None = None
    loop_condition: Node | None = None
    loop_step: Node | None = None
    result: Node | None = None
    id: int = 0  # the expression id (positions: SourceInfo)


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    out: list[tuple[int, int | bytes]] = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
            out.append((number, value))
        elif wire == 2:
            size, i = _varint(data, i)
            out.append((number, data[i : i + size]))
            i += size
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return out


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _bytes(fields: list[tuple[int, int | bytes]], number: int) -> list[bytes]:
    return [v for n, v in fields if n == number and isinstance(v, bytes)]


def _one(fields: list[tuple[int, int | bytes]], number: int) -> bytes | None:
    found = _bytes(fields, number)
    return found[0] if found else None


def _node(data: bytes) -> Node:
    f = _fields(data)
    node = _node_of(f)
    ids = [v for n, v in f if n == 2 and isinstance(v, int)]
    node.id = ids[0] if ids else 0
    return node


def _node_of(f: list[tuple[int, int | bytes]]) -> Node:
    if (raw := _one(f, _IDENT)) is not None:
        name = _one(_fields(raw), 1) or b""
        return Node("ident", name.decode())
    if (raw := _one(f, _SELECT)) is not None:
        sf = _fields(raw)
        operand = _one(sf, 1)
        return Node("select", (_one(sf, 2) or b"").decode(),
                    target=_node(operand) if operand else None)  # fmt: skip
    if (raw := _one(f, _CALL)) is not None:
        cf = _fields(raw)
        target = _one(cf, 1)
        return Node("call", (_one(cf, 2) or b"").decode(),
                    [_node(a) for a in _bytes(cf, 3)],
                    target=_node(target) if target else None)  # fmt: skip
    if (raw := _one(f, _LIST)) is not None:
        return Node("list", children=[_node(a) for a in _bytes(_fields(raw), 1)])
    if (raw := _one(f, _STRUCT)) is not None:
        children = []
        for entry in _bytes(_fields(raw), 3):
            ef = _fields(entry)
            children += [_node(b) for b in (_one(ef, 3), _one(ef, 4)) if b is not None]
        return Node("struct", children=children)
    if (raw := _one(f, _COMPREHENSION)) is not None:
        cf = _fields(raw)

        def part(n: int) -> Node | None:
            b = _one(cf, n)
            return _node(b) if b is not None else None

        return Node("comprehension", iter_var=(_one(cf, 1) or b"").decode(),
                    iter_range=part(2), accu_init=part(4), loop_condition=part(5),
                    loop_step=part(6), result=part(7))  # fmt: skip
    return Node("const")


def parse(serialized: bytes) -> Node:
    """The root expression of cel-cpp's serialized CheckedExpr."""
    return parse_checked(serialized)[0]


def parse_checked(serialized: bytes) -> tuple[Node, dict[int, int]]:
    """The root expression and each expression id's offset in the source."""
    any_fields = _fields(serialized)
    checked = _one(any_fields, 2)
    if checked is None:
        raise ValueError("not a serialized CheckedExpr")
    cf = _fields(checked)
    parsed = (_one(any_fields, 1) or b"").endswith(b"ParsedExpr")  # compiled unchecked
    expr = _one(cf, 2 if parsed else 4)
    if expr is None:
        raise ValueError("CheckedExpr without an expression")
    positions: dict[int, int] = {}
    source_info = _one(cf, 3 if parsed else 5)
    if source_info is not None:
        for entry in _bytes(_fields(source_info), 4):  # map<int64, int32> positions
            pair = dict(_fields(entry))
            key, value = pair.get(1, 0), pair.get(2, 0)
            if isinstance(key, int) and isinstance(value, int):
                positions[key] = value
    return _node(expr), positions
