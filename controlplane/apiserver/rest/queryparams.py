"""Query parameters read as kube-apiserver reads them.

Booleans follow Go's strconv.ParseBool, which Kubernetes' query conversion
uses: `1 t T TRUE true True` and `0 f F FALSE false False`; an empty value is
false. The official Python client sends `watch=True` and `follow=True`
(Python's str of a bool), so these must read as true. Anything else is a
400 naming the parameter, as Kubernetes answers it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NoReturn

from controlplane.apiserver.rest.status import BadRequest

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"", "0", "f", "F", "FALSE", "false", "False"})


def parse_bool(name: str, text: str) -> bool:
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise BadRequest(f'{name}: invalid value "{text}": strconv.ParseBool: parsing "{text}": '
                     "invalid syntax")  # fmt: skip


def flag(query: Mapping[str, str], name: str) -> bool:
    """The boolean parameter `name` (false when absent)."""
    return parse_bool(name, query.get(name, ""))


def ports(values: Iterable[str]) -> list[int]:
    """PodPortForwardOptions.ports from its query values, as Kubernetes'
    Convert_Slice_string_To_Slice_int32 reads them: repeated parameters,
    each a comma-separated list of decimal ports (strconv.ParseUint, 16
    bits); anything else is a 400 naming the parameter. Port 0 passes here
    and is refused by the node (kubelet: "must be > 0")."""
    out = []
    for value in values:
        for text in value.split(","):
            if not text.isascii() or not text.isdigit():
                _bad_port(text, "invalid syntax")
            if int(text) > 0xFFFF:
                _bad_port(text, "value out of range")
            out.append(int(text))
    return out


def _bad_port(text: str, why: str) -> NoReturn:
    raise BadRequest(f'ports: cannot convert to []int32: strconv.ParseUint: parsing "{text}": '
                     f"{why}")  # fmt: skip


def is_watch(query: Mapping[str, str]) -> bool:
    """Whether a GET of a collection is a watch; a malformed value is not
    one (the audit log's reading must never raise)."""
    return query.get("watch", "") in _TRUE
