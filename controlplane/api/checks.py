"""The vocabulary of validation: `Errors` and the checks every kind's rules are
written in (integers with bounds, objects, lists, enums, names, labels,
annotations, quantities, label selectors).

Each check adds `path: problem` to an Errors (`spec.replicas: must be >= 0`)
and, where useful, returns whether the value was there and well-formed, so a
caller checks deeper only what it can read. The messages are the ones users
see in a 422, so they never change casually. Pure functions: no storage, no
registry, never mutate the value.
"""

from __future__ import annotations

import re
from typing import Any

from controlplane.api.dnsnames import is_dns_label, is_dns_subdomain
from controlplane.api.quantity import parse_quantity
from controlplane.api.selectors import SelectorError, from_structured

Object = dict[str, Any]

_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class Errors:
    """Collects `path: problem` messages."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, problem: str) -> None:
        self.items.append(f"{path}: {problem}")

    def __bool__(self) -> bool:
        return bool(self.items)


def is_qualified_name(value: str) -> bool:
    """A label/annotation key: optional DNS-subdomain prefix + '/' + name (<= 63)."""
    prefix, slash, name = value.rpartition("/")
    if slash and not is_dns_subdomain(prefix):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME.match(name))


def name(e: Errors, path: str, value: Any, label: bool = False) -> None:
    """A required DNS-1123 subdomain (or, with label=True, a DNS-1123 label)."""
    if not isinstance(value, str) or not value:
        e.add(path, "required")
    elif label and not is_dns_label(value):
        e.add(path, f"{value!r} must be a DNS-1123 label (lower case alphanumerics and '-', <= 63)")
    elif not label and not is_dns_subdomain(value):
        e.add(
            path,
            f"{value!r} must be a DNS-1123 subdomain (lower case alphanumerics, '-' and '.', <= 253)",
        )


def integer(e: Errors, path: str, value: Any, minimum: int | None = None,
            maximum: int | None = None) -> bool:  # fmt: skip
    """An optional integer within bounds; True when present and valid."""
    if value is None:
        return False
    if isinstance(value, bool) or not isinstance(value, int):
        e.add(path, f"must be an integer, not {value!r}")
        return False
    if minimum is not None and value < minimum:
        e.add(path, f"must be >= {minimum}")
        return False
    if maximum is not None and value > maximum:
        e.add(path, f"must be <= {maximum}")
        return False
    return True


def mapping(e: Errors, path: str, value: Any, required: bool = False) -> bool:
    """An object (JSON map); True when present and one."""
    if value is None:
        if required:
            e.add(path, "required")
        return False
    if not isinstance(value, dict):
        e.add(path, f"must be an object, not {type(value).__name__}")
        return False
    return True


def items(e: Errors, path: str, value: Any, required: bool = False) -> bool:
    """A list; True when present, non-empty and one."""
    if value is None or value == []:
        if required:
            e.add(path, "required (at least one)")
        return False
    if not isinstance(value, list):
        e.add(path, f"must be a list, not {type(value).__name__}")
        return False
    return True


def enum(e: Errors, path: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        e.add(path, f"unsupported value {value!r}: supported values: {', '.join(allowed)}")


def boolean(e: Errors, obj: Object, field: str, path: str = "") -> None:
    """obj[field], when present, is a boolean."""
    if field in obj and not isinstance(obj[field], bool):
        e.add(path or field, "must be a boolean")


def label_map(e: Errors, path: str, value: Any) -> None:
    if not mapping(e, path, value):
        return
    for key, label in value.items():
        if not is_qualified_name(str(key)):
            e.add(f"{path}.{key}", "invalid label key (name or prefix/name, <= 63 characters)")
        if not isinstance(label, str) or len(label) > 63 or not _LABEL_VALUE.match(label):
            e.add(
                f"{path}.{key}",
                f"invalid label value {label!r} (<= 63 alphanumerics, '-', '_', '.')",
            )


def annotation_map(e: Errors, path: str, value: Any) -> None:
    if not mapping(e, path, value):
        return
    for key, text in value.items():
        if not is_qualified_name(str(key)):
            e.add(f"{path}.{key}", "invalid annotation key")
        if not isinstance(text, str):
            e.add(f"{path}.{key}", "annotation values must be strings")


def quantity(e: Errors, path: str, value: Any) -> Any:
    """A non-negative resource quantity, parsed (None when invalid)."""
    try:
        q = parse_quantity(value)
    except ValueError as err:
        e.add(path, str(err))
        return None
    if q < 0:
        e.add(path, "must be >= 0")
        return None
    return q


def selector(e: Errors, path: str, value: Any, required: bool = True) -> None:
    """A label selector (matchLabels, matchExpressions); a required one must not be empty."""
    if not mapping(e, path, value, required=required):
        return
    try:
        sel = from_structured(value)
    except SelectorError as err:
        e.add(path, str(err))
        return
    if required and sel.empty():
        e.add(path, "empty selector is invalid")
    if "matchLabels" in value:
        label_map(e, f"{path}.matchLabels", value["matchLabels"])


def percent_or_int(e: Errors, path: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, str):
        if not re.match(r"^\d+%$", value):
            e.add(path, f"{value!r} must be an integer or a percentage (e.g. 25%)")
    else:
        integer(e, path, value, 0)
