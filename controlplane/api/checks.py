"""The vocabulary of validation: `Errors` and the checks every kind's rules are
written in (integers with bounds, objects, lists, enums, names, labels,
annotations, quantities, label selectors).

Each check adds `path: problem` to an Errors and, where useful, returns
whether the value was there and well-formed, so a caller checks deeper only
what it can read. The problems read as Kubernetes' field errors
(k8s.io/apimachinery/pkg/util/validation/field): `spec.replicas: Invalid
value: -1: must be greater than or equal to 0`, `spec.selector: Required
value`, `spec.type: Unsupported value: "X": supported values: "A", "B"`,
`metadata.annotations: Too long: must have at most 262144 bytes`; the REST
front door turns each into a metav1.StatusCause by that prefix
(`cause_reason`). The messages are the ones users see in a 422, so they
never change casually. Pure functions: no storage, no registry, never
mutate the value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any

from controlplane.api.dnsnames import is_dns_label, is_dns_subdomain
from controlplane.api.quantity import parse_quantity
from controlplane.api.selectors import SelectorError, from_structured

Object = dict[str, Any]

_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


# Kubernetes' field.ErrorType texts -> the StatusCause reason each stands for.
CAUSE_REASONS: tuple[tuple[str, str], ...] = (
    ("Invalid value", "FieldValueInvalid"),
    ("Required value", "FieldValueRequired"),
    ("Unsupported value", "FieldValueNotSupported"),
    ("Duplicate value", "FieldValueDuplicate"),
    ("Forbidden", "FieldValueForbidden"),
    ("Too long", "FieldValueTooLong"),
    ("Too many", "FieldValueTooMany"),
    ("Not found", "FieldValueNotFound"),
    ("Internal error", "InternalError"),
)


def cause_reason(message: str) -> str:
    """The StatusCause reason of a problem's text (FieldValueInvalid when it
    names none of Kubernetes' error types)."""
    for prefix, reason in CAUSE_REASONS:
        if message.startswith(prefix):
            return reason
    return "FieldValueInvalid"


def go_value(value: Any) -> str:
    """A value as Kubernetes' field errors print it: strings quoted, numbers
    and booleans bare, null for nothing, objects and lists as JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), default=str)


class Errors:
    """Collects `path: problem` messages."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, problem: str) -> None:
        if problem == "required":  # the older spelling of field.Required
            problem = "Required value"
        self.items.append(f"{path}: {problem}")

    def invalid(self, path: str, value: Any, detail: str) -> None:
        """field.Invalid: `path: Invalid value: <value>: detail`."""
        self.add(path, f"Invalid value: {go_value(value)}: {detail}")

    def required(self, path: str, detail: str = "") -> None:
        self.add(path, f"Required value: {detail}" if detail else "Required value")

    def not_supported(self, path: str, value: Any, allowed: tuple[str, ...]) -> None:
        supported = ", ".join(go_value(a) for a in allowed)
        self.add(path, f"Unsupported value: {go_value(value)}: supported values: {supported}")

    def forbidden(self, path: str, detail: str) -> None:
        self.add(path, f"Forbidden: {detail}")

    def too_long(self, path: str, limit: int, unit: str = "bytes") -> None:
        self.add(path, f"Too long: must have at most {limit} {unit}")

    def duplicate(self, path: str, value: Any) -> None:
        self.add(path, f"Duplicate value: {go_value(value)}")

    def __bool__(self) -> bool:
        return bool(self.items)


def is_qualified_name(value: str) -> bool:
    """A label/annotation key: optional DNS-subdomain prefix + '/' + name (<= 63)."""
    prefix, slash, name = value.rpartition("/")
    if slash and not is_dns_subdomain(prefix):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME.match(name))


# The keys (and label values) of one kind's objects are a few strings written
# again and again (a template's pods carry the same ones): each is checked once.
# Only strings short enough to be valid are kept (the cache's size is its count).
_MAX_KEY = 253 + 1 + 63  # prefix, '/', name
_known_key = lru_cache(maxsize=4096)(is_qualified_name)
_known_label_value = lru_cache(maxsize=4096)(_LABEL_VALUE.match)


def _qualified_key(key: str) -> bool:
    return len(key) <= _MAX_KEY and _known_key(key)


def _label_value_ok(label: str) -> bool:
    return len(label) <= 63 and _known_label_value(label) is not None


DNS_LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


QUALIFIED_NAME_MESSAGE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MESSAGE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
# The most all annotations of one object may hold, keys and values (256 KiB).
TOTAL_ANNOTATION_SIZE = 256 * 1024


def name(e: Errors, path: str, value: Any, label: bool = False) -> None:
    """A required DNS-1123 subdomain (or, with label=True, a DNS-1123 label)."""
    if not isinstance(value, str) or not value:
        e.required(path, "name or generateName is required" if path == "metadata.name" else "")
    elif label and not is_dns_label(value):
        e.invalid(path, value, DNS_LABEL_MESSAGE)
    elif not label and not is_dns_subdomain(value):
        e.invalid(path, value, DNS_SUBDOMAIN_MESSAGE)


def integer(e: Errors, path: str, value: Any, minimum: int | None = None,
            maximum: int | None = None) -> bool:  # fmt: skip
    """An optional integer within bounds; True when present and valid."""
    if value is None:
        return False
    if isinstance(value, bool) or not isinstance(value, int):
        e.invalid(path, value, "must be an integer")
        return False
    if minimum is not None and value < minimum:
        e.invalid(path, value, f"must be greater than or equal to {minimum}")
        return False
    if maximum is not None and value > maximum:
        e.invalid(path, value, f"must be less than or equal to {maximum}")
        return False
    return True


def mapping(e: Errors, path: str, value: Any, required: bool = False) -> bool:
    """An object (JSON map); True when present and one."""
    if value is None:
        if required:
            e.required(path)
        return False
    if not isinstance(value, dict):
        e.invalid(path, value, "must be an object")
        return False
    return True


def each_object(
    e: Errors, path: str, values: Iterable[Any], required: bool = False
) -> Iterator[tuple[str, Any]]:
    """(`path[i]`, item) for each item of `values` that is an object; the
    others are reported at their path as `mapping` does."""
    for i, value in enumerate(values):
        where = f"{path}[{i}]"
        if mapping(e, where, value, required):
            yield where, value


def objects(e: Errors, path: str, values: Iterable[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(`path[i]`, item) for each item of `values` that is an object; each
    other is `path[i]: must be an object` (each_object words it as an invalid
    value, as the Kubernetes validations each copies do)."""
    for i, value in enumerate(values):
        where = f"{path}[{i}]"
        if isinstance(value, dict):
            yield where, value
        else:
            e.add(where, "must be an object")


def items(e: Errors, path: str, value: Any, required: bool = False) -> bool:
    """A list; True when present, non-empty and one."""
    if value is None or value == []:
        if required:
            e.required(path)
        return False
    if not isinstance(value, list):
        e.invalid(path, value, "must be a list")
        return False
    return True


def enum(e: Errors, path: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        e.not_supported(path, value, allowed)


def boolean(e: Errors, obj: Object, field: str, path: str = "") -> None:
    """obj[field], when present, is a boolean."""
    if field in obj and not isinstance(obj[field], bool):
        e.invalid(path or field, obj[field], "must be a boolean")


def label_map(e: Errors, path: str, value: Any) -> None:
    if not mapping(e, path, value):
        return
    for key, label in value.items():
        if not _qualified_key(str(key)):
            e.invalid(path, key, QUALIFIED_NAME_MESSAGE)
        if not isinstance(label, str):
            e.invalid(path, label, "a label value must be a string")
        elif _label_value_ok(label):
            continue
        elif len(label) > 63:
            e.invalid(path, label, "must be no more than 63 characters")
        else:
            e.invalid(path, label, LABEL_VALUE_MESSAGE)


def annotation_map(e: Errors, path: str, value: Any) -> None:
    if not mapping(e, path, value):
        return
    total = 0
    for key, text in value.items():
        if not _qualified_key(str(key).lower()):
            e.invalid(path, key, QUALIFIED_NAME_MESSAGE)
        if not isinstance(text, str):
            e.invalid(f"{path}.{key}", text, "annotation values must be strings")
        else:
            total += len(str(key).encode()) + len(text.encode())
    if total > TOTAL_ANNOTATION_SIZE:  # Kubernetes' ValidateAnnotationsSize
        e.too_long(path, TOTAL_ANNOTATION_SIZE)


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
