"""The subset of kubectl's JSONPath that scripts and CRD printer columns use:
`-o jsonpath=...`, `-o custom-columns=...` and additionalPrinterColumns.

Templates mix text and `{...}` expressions: field paths (`{.status.podIP}`,
`{.metadata.labels['app.kubernetes.io/name']}`), wildcards and indexes
(`{.items[*].metadata.name}`, `{.items[0]}`, `{.items[-1]}`), filters
(`{.status.conditions[?(@.type=="Ready")].status}`, with == or !=), string
literals (`{"\\n"}`), and `{range .items[*]}...{end}`. Several results print
separated by spaces; maps and lists print as JSON. Pure functions, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class JsonPathError(ValueError):
    """A template that does not parse, with the reason."""


Step = Callable[[list[Any]], list[Any]]


@dataclass
class Text:
    text: str


@dataclass
class Expr:
    steps: list[Step]


@dataclass
class Range:
    steps: list[Step]
    body: list[Text | Expr | Range]


Node = Text | Expr | Range


def _field(name: str) -> Step:
    def step(values: list[Any]) -> list[Any]:
        out = []
        for v in values:
            if isinstance(v, dict) and name in v:
                out.append(v[name])
        return out

    return step


def _wildcard(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if isinstance(v, list):
            out.extend(v)
        elif isinstance(v, dict):
            out.extend(v.values())
    return out


def _index(i: int) -> Step:
    def step(values: list[Any]) -> list[Any]:
        out = []
        for v in values:
            if isinstance(v, list) and -len(v) <= i < len(v):
                out.append(v[i])
        return out

    return step


def _scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)


def _filter(path: list[Step], op: str, literal: Any) -> Step:
    want = _scalar_text(literal)

    def step(values: list[Any]) -> list[Any]:
        out = []
        for v in values:
            items = v if isinstance(v, list) else [v]
            for item in items:
                got = _run(path, [item])
                if op == "exists":
                    keep = bool(got)
                elif op == "==":
                    keep = bool(got) and _scalar_text(got[0]) == want
                else:
                    keep = not got or _scalar_text(got[0]) != want
                if keep:
                    out.append(item)
        return out

    return step


_FILTER_RE = re.compile(r"^\?\(\s*@((?:\.[^=!\s)]+|\[[^\]]*\])*)\s*(?:(==|!=)\s*(.+?))?\s*\)$")


def parse_path(text: str) -> list[Step]:
    """`.a.b[*].c` (optionally starting with $ or @) as steps."""
    s = text.strip()
    if s.startswith(("$", "@")):
        s = s[1:]
    steps: list[Step] = []
    i = 0
    while i < len(s):
        ch = s[i]
        if ch == ".":
            j = i + 1
            while j < len(s) and s[j] not in ".[":
                j += 1
            name = s[i + 1 : j]
            if name == "*":
                steps.append(_wildcard)
            elif name:
                steps.append(_field(name))
            i = j
        elif ch == "[":
            depth, j = 0, i
            quote = ""
            while j < len(s):
                c = s[j]
                if quote:
                    if c == quote:
                        quote = ""
                elif c in "'\"":
                    quote = c
                elif c == "[":
                    depth += 1
                elif c == "]":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if j >= len(s):
                raise JsonPathError(f"unclosed [ in {text!r}")
            inner = s[i + 1 : j].strip()
            i = j + 1
            if inner == "*":
                steps.append(_wildcard)
            elif re.fullmatch(r"-?\d+", inner):
                steps.append(_index(int(inner)))
            elif len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
                steps.append(_field(inner[1:-1]))
            elif (m := _FILTER_RE.match(inner)) is not None:
                sub = parse_path(m.group(1))
                if m.group(2):
                    raw = m.group(3).strip()
                    try:
                        literal = json.loads(raw.replace("'", '"'))
                    except json.JSONDecodeError:
                        literal = raw
                    steps.append(_filter(sub, m.group(2), literal))
                else:
                    steps.append(_filter(sub, "exists", None))
            else:
                raise JsonPathError(f"unsupported [{inner}] in {text!r}")
        else:
            raise JsonPathError(f"unexpected {ch!r} at {i} in {text!r}")
    return steps


def _run(steps: list[Step], values: list[Any]) -> list[Any]:
    for step in steps:
        values = step(values)
    return values


def _split(template: str) -> list[tuple[bool, str]]:
    """(is_expression, text) pieces; braces inside quotes do not count."""
    out: list[tuple[bool, str]] = []
    i = 0
    while i < len(template):
        start = template.find("{", i)
        if start < 0:
            out.append((False, template[i:]))
            break
        if start > i:
            out.append((False, template[i:start]))
        j, quote = start + 1, ""
        while j < len(template):
            c = template[j]
            if quote:
                if c == "\\":
                    j += 1
                elif c == quote:
                    quote = ""
            elif c in "'\"":
                quote = c
            elif c == "}":
                break
            j += 1
        if j >= len(template):
            raise JsonPathError(f"unclosed {{ in {template!r}")
        out.append((True, template[start + 1 : j].strip()))
        i = j + 1
    return out


def parse(template: str) -> list[Node]:
    stack: list[list[Node]] = [[]]
    ranges: list[list[Step]] = []
    for is_expr, text in _split(template):
        if not is_expr:
            stack[-1].append(Text(text))
        elif text.startswith("range "):
            ranges.append(parse_path(text[len("range ") :]))
            stack.append([])
        elif text == "end":
            if not ranges:
                raise JsonPathError(f"{{end}} without {{range}} in {template!r}")
            body = stack.pop()
            stack[-1].append(Range(ranges.pop(), body))
        elif text.startswith(("'", '"')):
            try:
                inner = text[1:-1].replace('"', '\\"')
                stack[-1].append(Text(str(json.loads(f'"{inner}"', strict=False))))
            except json.JSONDecodeError as err:
                raise JsonPathError(f"bad string literal {text!r}") from err
        else:
            stack[-1].append(Expr(parse_path(text)))
    if ranges:
        raise JsonPathError(f"{{range}} without {{end}} in {template!r}")
    return stack[0]


def _render(nodes: list[Node], data: Any) -> str:
    out = []
    for node in nodes:
        if isinstance(node, Text):
            out.append(node.text)
        elif isinstance(node, Expr):
            out.append(" ".join(_scalar_text(v) for v in _run(node.steps, [data])))
        else:
            for item in _run(node.steps, [data]):
                out.append(_render(node.body, item))
    return "".join(out)


def render(template: str, data: Any) -> str:
    """Fill `template` from `data` (an object, or a List of them)."""
    return _render(parse(template), data)


def values(path: str, data: Any) -> list[Any]:
    """Every value a path expression (`.status.podIP` or `{.status.podIP}`) selects."""
    p = path.strip()
    if p.startswith("{") and p.endswith("}"):
        p = p[1:-1]
    return _run(parse_path(p), [data])


def custom_columns(spec: str) -> list[tuple[str, str]]:
    """`NAME:.metadata.name,IP:.status.podIP` as [(header, path)]."""
    columns = []
    for part in spec.split(","):
        header, sep, path = part.partition(":")
        if not sep or not header or not path:
            raise JsonPathError(
                f"custom-columns format: expected HEADER:JSONPATH[,HEADER:JSONPATH...], got {part!r}"
            )
        parse_path(path.strip().strip("{}"))
        columns.append((header, path))
    return columns


def column_value(path: str, obj: Any) -> str:
    got = values(path, obj)
    return ",".join(_scalar_text(v) for v in got) if got else "<none>"
