"""Kubernetes' CEL format library (k8s.io/apiserver/pkg/cel/library/format.go):
`format.dns1123Label().validate(s)` and its siblings, and
`format.named('dns1123Label')`. A format is a one-key map {"@format": name}
(cel-cpp's Python bindings carry no opaque values); `validate` returns null
when the string is valid, else the list of Kubernetes' messages (Kubernetes
returns an optional: rules written `validate(x) == null`, as Gateway API's,
behave the same; `.hasValue()` on the result does not apply here).
"""

from __future__ import annotations

import base64
import datetime
import re
import uuid
from collections.abc import Callable
from typing import Any

from cel_expr_python import cel

from controlplane.api.checks import is_qualified_name

_KEY = "@format"
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _pattern(regex: re.Pattern[str], limit: int, what: str) -> Callable[[str], list[str]]:
    def check(s: str) -> list[str]:
        errors = []
        if len(s) > limit:
            errors.append(f"must be no more than {limit} characters")
        if not regex.match(s):
            errors.append(what)
        return errors

    return check


def _prefix(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """The *Prefix formats: a trailing '-' is allowed (a generateName)."""
    return lambda s: check(s[:-1] if s.endswith("-") else s)


def _parses(parse: Callable[[str], Any], what: str) -> Callable[[str], list[str]]:
    def check(s: str) -> list[str]:
        try:
            parse(s)
        except (ValueError, TypeError):
            return [what]
        return []

    return check


_RFC1123 = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
            "'-', and must start and end with an alphanumeric character")  # fmt: skip
_SUB = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
        "'-' or '.', and must start and end with an alphanumeric character")  # fmt: skip
_1035 = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
         "with an alphabetic character, and end with an alphanumeric character")  # fmt: skip

FORMATS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": _pattern(_LABEL, 63, _RFC1123),
    "dns1123Subdomain": _pattern(_SUBDOMAIN, 253, _SUB),
    "dns1035Label": _pattern(_DNS1035, 63, _1035),
    "labelValue": _pattern(
        _LABEL_VALUE,
        63,
        "a valid label must be an empty string or consist of "
        "alphanumeric characters, '-', '_' or '.'",
    ),
    "qualifiedName": lambda s: [] if is_qualified_name(s) else ["must be a qualified name"],
    "uuid": _parses(uuid.UUID, "does not match the UUID format"),
    "byte": _parses(lambda s: base64.b64decode(s, validate=True), "invalid base64"),
    "date": _parses(datetime.date.fromisoformat, "invalid date"),
    "datetime": _parses(
        lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00")), "invalid datetime"
    ),
    "uri": _parses(
        lambda s: s if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", s) else int("x"), "invalid URI"
    ),
}
FORMATS["dns1123LabelPrefix"] = _prefix(FORMATS["dns1123Label"])
FORMATS["dns1123SubdomainPrefix"] = _prefix(FORMATS["dns1123Subdomain"])
FORMATS["dns1035LabelPrefix"] = _prefix(FORMATS["dns1035Label"])


def _validate(fmt: dict[str, Any], s: str) -> list[str] | None:
    errors = FORMATS[str(fmt[_KEY])](s)
    return errors or None


def _named(name: str) -> dict[str, Any] | None:
    return {_KEY: name} if name in FORMATS else None


def decls(opaque: Any) -> list[Any]:
    T = cel.Type
    found = [
        cel.FunctionDecl(f"format.{name}", [cel.Overload(
            f"format_{name}", opaque, [], is_member=False, impl=lambda n=name: {_KEY: n})])
        for name in FORMATS
    ]  # fmt: skip
    found.append(cel.FunctionDecl("format.named", [cel.Overload(
        "format_named", T.DYN, [T.STRING], is_member=False, impl=_named)]))  # fmt: skip
    found.append(cel.FunctionDecl("validate", [cel.Overload(
        "format_validate", T.DYN, [opaque, T.STRING], is_member=True, impl=_validate)]))  # fmt: skip
    return found
