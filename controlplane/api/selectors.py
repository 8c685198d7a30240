"""Label and field selectors, as Kubernetes writes and evaluates them.

Label selector strings: comma-separated requirements `k=v`, `k==v`, `k!=v`,
`k in (a,b)`, `k notin (a,b)`, `k` (exists), `!k` (does not exist), `k>n`,
`k<n`. Structured selectors (`matchLabels` + `matchExpressions` with In,
NotIn, Exists, DoesNotExist) convert to and match the same way. Field
selectors: `path=v`, `path==v`, `path!=v` over dotted paths
(`metadata.name`, `spec.nodeName`, `status.phase`, ...); a missing field
reads as "" so `spec.nodeName=` selects unbound pods.

Pure functions only; a parse error raises SelectorError naming the problem.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class SelectorError(ValueError):
    """An unparsable selector; the message says what is wrong."""


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        value = labels.get(self.key)
        if self.op == "=":
            return has and value == self.values[0]
        if self.op == "!=":
            return not has or value != self.values[0]
        if self.op == "in":
            return has and value in self.values
        if self.op == "notin":
            return not has or value not in self.values
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if self.op in ("gt", "lt"):
            if not has or value is None:
                return False
            try:
                number = int(value)
            except ValueError:
                return False
            bound = int(self.values[0])
            return number > bound if self.op == "gt" else number < bound
        raise SelectorError(f"unknown operator {self.op!r}")

    def __str__(self) -> str:
        if self.op == "exists":
            return self.key
        if self.op == "!":
            return f"!{self.key}"
        if self.op in ("in", "notin"):
            return f"{self.key} {self.op} ({','.join(self.values)})"
        if self.op == "gt":
            return f"{self.key}>{self.values[0]}"
        if self.op == "lt":
            return f"{self.key}<{self.values[0]}"
        return f"{self.key}{self.op}{self.values[0]}"


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def empty(self) -> bool:
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_KEY_RE = re.compile(rf"^{_KEY}$")
_VALUE_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_SET_RE = re.compile(rf"^\s*(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^)]*)\)\s*$")
_CMP_RE = re.compile(rf"^\s*(?P<key>{_KEY})\s*(?P<op>==|!=|=|>|<)\s*(?P<value>[^\s]*)\s*$")


def _split_top(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current = ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise SelectorError(f"unbalanced ')' in {text!r}")
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if depth:
        raise SelectorError(f"unbalanced '(' in {text!r}")
    parts.append(current)
    return parts


def _check_value(value: str, text: str) -> str:
    if not _VALUE_RE.match(value) or len(value) > 63:
        raise SelectorError(f"invalid label value {value!r} in selector {text!r}")
    return value


def parse_label_selector(text: str) -> LabelSelector:
    """Parse a label selector string; "" selects everything."""
    text = text.strip()
    if not text:
        return LabelSelector()
    requirements: list[Requirement] = []
    for part in _split_top(text):
        part = part.strip()
        if not part:
            raise SelectorError(f"empty requirement in selector {text!r}")
        m = _SET_RE.match(part)
        if m:
            values = tuple(v.strip() for v in m.group("values").split(",") if v.strip())
            for v in values:
                _check_value(v, text)
            if not values:
                raise SelectorError(f"{m.group('op')} needs at least one value in {text!r}")
            requirements.append(Requirement(m.group("key"), m.group("op"), values))
            continue
        m = _CMP_RE.match(part)
        if m:
            op = {"==": "=", "=": "=", "!=": "!=", ">": "gt", "<": "lt"}[m.group("op")]
            value = m.group("value")
            if op in ("gt", "lt"):
                if not re.match(r"^-?\d+$", value):
                    raise SelectorError(f"{part!r}: {m.group('op')} needs an integer")
            else:
                _check_value(value, text)
            requirements.append(Requirement(m.group("key"), op, (value,)))
            continue
        if part.startswith("!") and _KEY_RE.match(part[1:].strip()):
            requirements.append(Requirement(part[1:].strip(), "!"))
            continue
        if _KEY_RE.match(part):
            requirements.append(Requirement(part, "exists"))
            continue
        raise SelectorError(f"cannot parse requirement {part!r} in selector {text!r}")
    return LabelSelector(tuple(requirements))


_EXPR_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def from_structured(selector: Mapping[str, Any] | None) -> LabelSelector:
    """A metav1.LabelSelector dict (matchLabels, matchExpressions) as a LabelSelector.

    An empty or missing selector matches everything (as Kubernetes has it for
    LabelSelectorAsSelector); callers that must refuse empty selectors check.
    """
    if not selector:
        return LabelSelector()
    requirements: list[Requirement] = []
    for key, value in sorted((selector.get("matchLabels") or {}).items()):
        requirements.append(Requirement(str(key), "=", (str(value),)))
    for expr in selector.get("matchExpressions") or []:
        op = _EXPR_OPS.get(str(expr.get("operator", "")))
        if op is None:
            raise SelectorError(f"unknown operator {expr.get('operator')!r}")
        values = tuple(str(v) for v in expr.get("values") or [])
        requirements.append(Requirement(str(expr.get("key", "")), op, values))
    return LabelSelector(tuple(requirements))


def selector_string(selector: Mapping[str, Any] | None) -> str:
    """The string form of a structured selector (Scale status.selector)."""
    return str(from_structured(selector))


# -- field selectors ------------------------------------------------------------


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

    def empty(self) -> bool:
        return not self.requirements

    def value_of(self, path: str) -> str | None:
        """The value an `=` requirement on path asks for, if any."""
        for r in self.requirements:
            if r.path == path and r.op == "=":
                return r.value
        return None


_FIELD_RE = re.compile(r"^\s*(?P<path>[A-Za-z0-9_.\-\[\]]+)\s*(?P<op>==|!=|=)\s*(?P<value>.*?)\s*$")


def parse_field_selector(text: str) -> FieldSelector:
    text = text.strip()
    if not text:
        return FieldSelector()
    requirements: list[FieldRequirement] = []
    for part in text.split(","):
        if not part.strip():
            continue  # an empty term (a trailing comma) selects nothing more, as Kubernetes
        m = _FIELD_RE.match(part)
        if not m:
            raise SelectorError(
                f"invalid field selector {part!r} (expected path=value or path!=value)"
            )
        op = "!=" if m.group("op") == "!=" else "="
        requirements.append(FieldRequirement(m.group("path"), op, m.group("value")))
    return FieldSelector(tuple(requirements))


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string value at a dotted path; "" when missing."""
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, Mapping):
            return ""
        current = current.get(part)
        if current is None:
            return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    if isinstance(current, (str, int, float)):
        return str(current)
    return ""
