"""Label and field selectors: parsing and matching, as Kubernetes spells them.

Label selectors: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`,
`!a`, comma-separated (all must hold). `from_label_selector()` turns a
`metav1.LabelSelector` dict (matchLabels, matchExpressions) into the same
form, as controllers need. Field selectors: `path=value`, `path!=value` over
dotted paths (`metadata.name`, `spec.nodeName`, `status.phase`). Pure
functions: no I/O, no transport, so the store, fakes and skiffctl share them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class SelectorError(ValueError):
    """A selector string or LabelSelector that does not parse."""


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "=":
            return present and value == self.values[0]
        if self.op == "!=":
            return not present or value != self.values[0]
        if self.op == "in":
            return present and value in self.values
        if self.op == "notin":
            return not present or value not in self.values
        if self.op == "exists":
            return present
        return not present  # "!"

    def __str__(self) -> str:
        if self.op in ("=", "!="):
            return f"{self.key}{self.op}{self.values[0]}"
        if self.op in ("in", "notin"):
            return f"{self.key} {self.op} ({','.join(self.values)})"
        if self.op == "exists":
            return self.key
        return f"!{self.key}"


@dataclass(frozen=True)
class Selector:
    """All requirements must hold. The empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def empty(self) -> bool:
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


class Nothing(Selector):
    """Matches nothing (a LabelSelector that is null, as Kubernetes treats it)."""

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        return False


_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_VALUE = r"[-A-Za-z0-9_.]*"
_SET_RE = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s*\(([^)]*)\)\s*")
_CMP_RE = re.compile(rf"^\s*({_KEY})\s*(==|!=|=)\s*({_VALUE})\s*")
_NOT_RE = re.compile(rf"^\s*!\s*({_KEY})\s*")
_EXISTS_RE = re.compile(rf"^\s*({_KEY})\s*")


def parse_label_selector(text: str) -> Selector:
    """Parse a label selector string; raises SelectorError naming the problem."""
    reqs: list[Requirement] = []
    rest = text.strip()
    while rest:
        if m := _SET_RE.match(rest):
            values = tuple(v.strip() for v in m.group(3).split(",") if v.strip())
            reqs.append(Requirement(m.group(1), m.group(2), values))
        elif m := _CMP_RE.match(rest):
            op = "=" if m.group(2) in ("=", "==") else "!="
            reqs.append(Requirement(m.group(1), op, (m.group(3),)))
        elif m := _NOT_RE.match(rest):
            reqs.append(Requirement(m.group(1), "!"))
        elif m := _EXISTS_RE.match(rest):
            reqs.append(Requirement(m.group(1), "exists"))
        else:
            raise SelectorError(f"invalid label selector {text!r} at {rest!r}")
        rest = rest[m.end() :]
        if rest.startswith(","):
            rest = rest[1:].strip()
            if not rest:
                raise SelectorError(f"invalid label selector {text!r}: trailing comma")
        elif rest:
            raise SelectorError(f"invalid label selector {text!r} at {rest!r}")
    return Selector(tuple(reqs))


def from_label_selector(selector: Mapping[str, Any] | None) -> Selector:
    """A `metav1.LabelSelector` dict as a Selector. None matches nothing, {} everything."""
    if selector is None:
        return Nothing()
    reqs = [
        Requirement(k, "=", (str(v),))
        for k, v in sorted((selector.get("matchLabels") or {}).items())
    ]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in selector.get("matchExpressions") or []:
        op = ops.get(str(expr.get("operator")))
        if op is None:
            raise SelectorError(f"invalid matchExpressions operator {expr.get('operator')!r}")
        values = tuple(str(v) for v in expr.get("values") or ())
        reqs.append(Requirement(str(expr.get("key")), op, values))
    return Selector(tuple(reqs))


def selector_string(match_labels: Mapping[str, str]) -> str:
    """`{"app": "web"}` as `app=web`."""
    return ",".join(f"{k}={v}" for k, v in sorted(match_labels.items()))


@dataclass(frozen=True)
class FieldRequirement:
    path: str
    op: str  # "=" or "!="
    value: str

    def matches(self, obj: Mapping[str, Any]) -> bool:
        actual = field_value(obj, self.path)
        return (actual == self.value) if self.op == "=" else (actual != self.value)


@dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all(r.matches(obj) for r in self.requirements)


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string value at a dotted path; "" when absent (as Kubernetes compares)."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def parse_field_selector(text: str) -> FieldSelector:
    reqs: list[FieldRequirement] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        m = re.match(r"^([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*)$", part)
        if m is None:
            raise SelectorError(f"invalid field selector {text!r} at {part!r}")
        op = "!=" if m.group(2) == "!=" else "="
        reqs.append(FieldRequirement(m.group(1), op, m.group(3).strip()))
    return FieldSelector(tuple(reqs))
