"""Size and nesting limits on what clients send, checked before decoding.

Every front door (gRPC and REST) calls `check_body` on a request body
before it decodes it: at most `MAX_BODY` bytes (3 MiB, Kubernetes' request
limit) and at most `MAX_DEPTH` levels of JSON nesting (Kubernetes' decoder
stops at 100 as well). The registry refuses to store an object whose stored
form exceeds `MAX_OBJECT` (1.5 MiB, etcd's default request limit).

The depth check never builds the document: C-speed passes drop escapes,
strings and every byte but brackets, then one pass over the brackets alone
counts the deepest level. Refusals are `Invalid` and name the limit. This
module never decodes JSON and never touches a transport.
"""

from __future__ import annotations

import re
from typing import Any

from controlplane.client.errors import Invalid

MAX_BODY = 3 * 1024 * 1024
MAX_DEPTH = 100
MAX_OBJECT = 1536 * 1024

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_KEEP = frozenset(b'{}[]"')
_DROP = bytes(b for b in range(256) if b not in _KEEP)
_OPEN = frozenset(b"{[")
# Kubernetes' integers are int64 at most; a run of 19 digits may be past it.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
# Digits to 1, every other byte to 0: a run of 19 digits is then a plain
# substring search, about 20x faster than a regex over a typical object.
_DIGIT_MASK = bytes(0x31 if 0x30 <= b <= 0x39 else 0x30 for b in range(256))
_LONG_DIGITS = b"1" * 19


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


def check_size(size: int, what: str = "request body") -> None:
    if size > MAX_BODY:
        raise Invalid(
            f"{what}: {size} bytes ({_mib(size)}) exceeds the limit of {MAX_BODY} bytes "
            f"({_mib(MAX_BODY)})"
        )


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text (0 for a scalar)."""
    brackets = data
    if b'"' in brackets:
        if b"\\" in brackets:
            brackets = _ESCAPE.sub(b"", brackets)
        brackets = brackets.translate(None, _DROP)
        brackets = _STRING.sub(b"", brackets)
    else:
        brackets = brackets.translate(None, _DROP)
    depth = deepest = 0
    for b in brackets:
        if b in _OPEN:
            depth += 1
            if depth > deepest:
                deepest = depth
        else:
            depth -= 1
    return deepest


def check_depth(data: bytes, what: str = "request body") -> None:
    # Fewer opening brackets than the limit cannot nest deeper than it.
    if data.count(b"{") + data.count(b"[") <= MAX_DEPTH:
        return
    depth = json_depth(data)
    if depth > MAX_DEPTH:
        raise Invalid(f"{what}: JSON nested {depth} levels deep exceeds the limit of {MAX_DEPTH}")


def check_body(data: bytes, what: str = "request body") -> None:
    """Refuse a body over MAX_BODY bytes or nested deeper than MAX_DEPTH."""
    check_size(len(data), what)
    check_depth(data, what)


def check_stored(size: int, resource: str, name: str) -> None:
    """Refuse to store an object whose stored form exceeds MAX_OBJECT."""
    if size > MAX_OBJECT:
        raise Invalid(
            f'{resource} "{name}" is too large: {size} bytes ({_mib(size)}) exceeds the '
            f"limit of {MAX_OBJECT} bytes ({_mib(MAX_OBJECT)}) per stored object"
        )


def check_integers(data: bytes, obj: Any, what: str = "object") -> None:
    """Refuse an object holding an integer outside int64 (a number past 2^64
    would otherwise be stored as it is and break every Go client that reads
    it). `data` is the object's JSON: only a run of 19 digits in it makes
    the check walk `obj` to name the field."""
    if _LONG_DIGITS not in data.translate(_DIGIT_MASK):
        return
    found = _out_of_range(obj, "")
    if found is not None:
        path, value = found
        raise Invalid(
            f"{path or what}: the integer {str(value)[:40]} is out of range "
            f"(integers must fit in 64 bits: {INT_MIN} to {INT_MAX})"
        )


def _out_of_range(value: Any, path: str) -> tuple[str, int] | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return None if INT_MIN <= value <= INT_MAX else (path, value)
    if isinstance(value, dict):
        for key, item in value.items():
            found = _out_of_range(item, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _out_of_range(item, f"{path}[{i}]")
            if found is not None:
                return found
    return None
