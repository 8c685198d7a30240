"""Field references of a CRD rule checked against its schema, as cel-go's
type checker does with the structural schema's types: `self.replicass`
where the object declares `replicas` is a compile error when the CRD is
written (`undefined field 'replicass'`, with the position).

Conservative: only chains of field selections from `self` or `oldSelf` are
checked, and only through objects that declare their properties (no
additionalProperties, no x-kubernetes-preserve-unknown-fields, not an
embedded resource, not int-or-string); the root always has apiVersion,
kind and metadata.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.cel import ast, escaping

_ROOT_FIELDS = ("apiVersion", "kind", "metadata")


def undefined(serialized: bytes, source: str, schema: dict[str, Any], root: bool) -> str | None:
    """The first undefined field as cel-go's error text, or None."""
    tree, positions = ast.parse_checked(serialized)
    for node in _nodes(tree):
        chain = _chain(node)
        if chain is None:
            continue
        current: Any = schema
        at_root = root
        for select in chain:
            if not _closed(current) or (at_root and select.name in _ROOT_FIELDS):
                break
            props = {escaping.escape(k): v for k, v in (current.get("properties") or {}).items()}
            if select.name not in props:
                offset = positions.get(select.id, 0)
                return (f"ERROR: <input>:1:{offset + 1}: undefined field '{select.name}'\n"
                        f" | {source}\n | {'.' * offset}^")  # fmt: skip
            current = props[select.name]
            at_root = False
    return None


def _closed(s: Any) -> bool:
    return (
        isinstance(s, dict)
        and s.get("type") == "object"
        and isinstance(s.get("properties"), dict)
        and "additionalProperties" not in s
        and not s.get("x-kubernetes-preserve-unknown-fields")
        and not s.get("x-kubernetes-embedded-resource")
        and not s.get("x-kubernetes-int-or-string")
    )


def _chain(node: ast.Node) -> list[ast.Node] | None:
    if node.kind != "select":
        return None
    selects: list[ast.Node] = []
    while node.kind == "select" and node.target is not None:
        selects.append(node)
        node = node.target
    if node.kind == "ident" and node.name in ("self", "oldSelf"):
        return selects[::-1]
    return None


def _nodes(node: ast.Node | None) -> list[ast.Node]:
    if node is None:
        return []
    found = [node]
    if node.kind == "select":  # a chain is judged whole, from its outermost select
        inner = node.target
        while inner is not None and inner.kind == "select":
            inner = inner.target
        return found + _nodes(inner)
    for child in (node.target, *node.children, node.iter_range, node.accu_init,
                  node.loop_condition, node.loop_step, node.result):  # fmt: skip
        found += _nodes(child)
    return found
