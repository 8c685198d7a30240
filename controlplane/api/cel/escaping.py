"""Property names as CEL sees them in a CRD rule (Kubernetes'
apiserver/pkg/cel/escaping.go): a declared property whose name is a CEL
reserved word is `__{word}__` (`self.__namespace__`), and `__`, `.`, `-`
and `/` in a name are `__underscores__`, `__dot__`, `__dash__` and
`__slash__`. Only properties a schema declares are renamed (a map's keys
are data, read with `self['a-b']`)."""

from __future__ import annotations

import re
from typing import Any

RESERVED = frozenset((
    "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
    "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
    "void", "while",
))  # fmt: skip
_SPECIAL = re.compile(r"__|[.\-/]")
_NAMES = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}


def escape(name: str) -> str:
    if name in RESERVED:
        return f"__{name}__"
    return _SPECIAL.sub(lambda m: _NAMES[m.group(0)], name)


def needs_escaping(name: str) -> bool:
    return name in RESERVED or _SPECIAL.search(name) is not None


def escaped(value: Any, schema: Any) -> Any:
    """`value` with its declared property names escaped (itself when none needs it)."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        changed = False
        out: dict[str, Any] = {}
        for key, sub in value.items():
            child = props.get(key) if key in props else (extra if isinstance(extra, dict) else None)
            new_sub = escaped(sub, child)
            new_key = escape(key) if key in props and needs_escaping(key) else key
            changed = changed or new_key != key or new_sub is not sub
            out[new_key] = new_sub
        return out if changed else value
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        items = [escaped(item, schema["items"]) for item in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value
