"""Static cost estimates of CEL expressions, as Kubernetes refuses a rule
whose worst case is too dear before it is ever run
(k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel, apiserver/pkg/cel).

The estimate walks the checked expression (ast.py) with the sizes the
schema allows: an array's maxItems, a map's maxProperties, a string's
maxLength, and where a schema sets no bound, what a 3 MiB request could
hold. A comprehension costs its range's size times its body, so a nested
loop over an unbounded list is refused, and adding maxItems is the fix
(Kubernetes' advice, in its words, in the error).
"""

from __future__ import annotations

import math
from typing import Any

from controlplane.api.cel.ast import Node, parse

# k8s.io/apiserver/pkg/apis/cel/config.go and apiextensions validation
PER_CALL_LIMIT = 1_000_000
STATIC_ESTIMATED_COST_LIMIT = 10_000_000
STATIC_ESTIMATED_CRD_COST_LIMIT = 100_000_000
MAX_REQUEST_SIZE_BYTES = 3 * 1024 * 1024
UNBOUNDED_STRING = MAX_REQUEST_SIZE_BYTES
UNBOUNDED_LIST = MAX_REQUEST_SIZE_BYTES // 3  # the smallest item and its comma
ADVICE = (
    "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength "
    "where arrays, maps, and strings are declared)"
)

Schema = dict[str, Any] | None
# Functions whose cost grows with the string or list they read (cel-go's
# 0.1 per character for string functions, 1 per element for list ones).
_STRING_SCAN = {"matches", "contains", "startsWith", "endsWith", "find", "findAll", "split",
                "replace", "lowerAscii", "upperAscii", "trim", "indexOf", "lastIndexOf",
                "substring", "charAt", "quote", "join", "url", "isURL", "quantity"}  # fmt: skip
_LOGICAL = {"_&&_", "_||_", "!_", "@not_strictly_false", "_?_:_"}
_LIST_SCAN = {"isSorted", "sum", "min", "max", "join"}


def max_size(schema: Schema) -> int:
    """The most items, properties or characters a value of `schema` can have."""
    if not isinstance(schema, dict):
        return 1
    t = schema.get("type")
    if t == "array":
        return int(schema.get("maxItems", UNBOUNDED_LIST))
    if t == "string":
        return int(schema.get("maxLength", UNBOUNDED_STRING))
    if t == "object" or "additionalProperties" in schema or "properties" in schema:
        if "maxProperties" in schema:
            return int(schema["maxProperties"])
        if isinstance(schema.get("additionalProperties"), dict) or schema.get(
            "x-kubernetes-preserve-unknown-fields"
        ):
            return UNBOUNDED_LIST
        return max(1, len(schema.get("properties") or {}))
    return 1


def _member(schema: Schema, name: str) -> Schema:
    if not isinstance(schema, dict):
        return None
    props = schema.get("properties") or {}
    if name in props:
        return dict(props[name])
    extra = schema.get("additionalProperties")
    return dict(extra) if isinstance(extra, dict) else None


def _element(schema: Schema) -> Schema:
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        return dict(schema["items"])
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        return {"type": "string", "maxLength": UNBOUNDED_STRING}  # a map's keys
    return None


class _Estimator:
    def __init__(self, env: dict[str, Schema]) -> None:
        self.env = dict(env)

    def walk(self, node: Node | None) -> tuple[int, Schema]:
        """(cost, schema of the value where known)."""
        if node is None or node.kind == "const":
            return 0, None
        if node.kind == "ident":  # a comprehension's accumulator is free (cel-go)
            return (0 if node.name.startswith("@") else 1), self.env.get(node.name)
        if node.kind == "select":
            cost, schema = self.walk(node.target)
            return cost + 1, _member(schema, node.name)
        if node.kind in ("list", "struct"):
            return 1 + sum(self.walk(c)[0] for c in node.children), None
        if node.kind == "comprehension":
            return self._comprehension(node)
        return self._call(node)

    def _call(self, node: Node) -> tuple[int, Schema]:
        cost, target_schema = self.walk(node.target) if node.target else (0, None)
        arg_schemas: list[Schema] = []
        for child in node.children:
            c, s = self.walk(child)
            cost += c
            arg_schemas.append(s)
        scanned = target_schema if node.target else (arg_schemas[0] if arg_schemas else None)
        if node.name == "@in" and len(arg_schemas) == 2:  # a list is scanned, a map is not
            container = arg_schemas[1]
            if isinstance(container, dict) and container.get("type") == "array":
                cost += max_size(container)
        elif node.name in _STRING_SCAN or node.name in _LIST_SCAN:
            cost += math.ceil(max_size(scanned) * (0.1 if node.name in _STRING_SCAN else 1))
        if node.name == "_[_]" and arg_schemas:
            return cost + 1, _element(arg_schemas[0]) or _member(arg_schemas[0], "")
        if node.name in _LOGICAL:  # short-circuit operators cost their operands
            return cost, None
        return cost + 1, None

    def _comprehension(self, node: Node) -> tuple[int, Schema]:
        range_cost, range_schema = self.walk(node.iter_range)
        saved = self.env.get(node.iter_var)
        self.env[node.iter_var] = _element(range_schema)
        body = self.walk(node.loop_condition)[0] + self.walk(node.loop_step)[0]
        if saved is None:
            self.env.pop(node.iter_var, None)
        else:
            self.env[node.iter_var] = saved
        size = max_size(range_schema) if range_schema is not None else 1
        total = range_cost + self.walk(node.accu_init)[0] + self.walk(node.result)[0]
        return total + size * max(body, 1), None


def estimate(serialized: bytes, env: dict[str, Schema]) -> int:
    """The worst-case cost of a compiled expression (Program.ast()) whose
    variables have the given schemas (None: unknown, counted as small)."""
    return _Estimator(env).walk(parse(serialized))[0]


def exceeds(cost: int, limit: int) -> str:
    """Kubernetes' 'by factor of' wording."""
    factor = cost / limit
    return "more than 100x" if factor > 100 else f"{factor:.1f}x"
