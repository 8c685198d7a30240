"""Duplicate keys in a JSON document, found as Kubernetes' strict decoding finds them.

kube-apiserver decodes a body with sigs.k8s.io/json's UnmarshalStrict when
fieldValidation is Strict or Warn (the default): a key an object already
had is `duplicate field "spec.replicas"`, the path built as its decoder
walks (keys joined by ".", list items as "[0]": `spec.containers[0].name`),
each path once, at most 100, in the order the decoder meets them (a key is
checked before its value is read).

orjson, which decodes every body, keeps the last of repeated keys and says
nothing, so `scan(data, doc)` first asks whether `data` can repeat a key at
all, at the cost of one orjson write and a few byte scans: a text equal to
orjson's writing of the decoded document has each key once (clients write
compact JSON, as orjson does); otherwise, where the text has no `\\\\` and no
`\\u` escapes and no space before a colon, every key ends in `":` not
preceded by a backslash and every other such `":` opens a string starting
with ":", and the writing has the same strings less those of dropped keys,
so equal counts of key ends prove there is no repeat. Only where neither
rules one out is the text decoded again by the standard library, every key
kept (`find`). Pure functions: no I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from controlplane.api import jsoncodec

MAX_ERRORS = 100  # as sigs.k8s.io/json keeps
_SPACED_COLON = re.compile(rb'"[ \t\r\n]+:')


@dataclass
class Found:
    """The duplicates of one document: (ordinal, path) in the decoder's order,
    and the ordinal of each path's first key, to place other errors among them
    (the ordinal counts every key of the document in text order)."""

    duplicates: list[tuple[int, str]] = field(default_factory=list)
    first: dict[str, int] = field(default_factory=dict)

    def texts(self, prefix: str = "") -> list[str]:
        return [f'{prefix}duplicate field "{path}"' for _, path in self.duplicates]


class _Pairs(list[tuple[str, Any]]):
    """An object as the key/value pairs written, repeats included."""


def _keys(text: bytes) -> int:
    return text.count(b'":') - text.count(b'\\":')


def possible(data: bytes, doc: Any) -> bool:
    """False when the JSON text `data`, which decoded to `doc`, provably has
    no repeated key; True when it may have one."""
    try:
        written = jsoncodec.dumps(doc)
    except (TypeError, ValueError):
        return True
    if written == data:  # the same text (compact, as clients write it): each key once
        return False
    escaped = b"\\" in data
    if escaped and (b"\\\\" in data or b"\\u" in data):
        return True  # what byte counts cannot see through
    if _SPACED_COLON.search(data) is not None:
        return True  # a key whose colon does not follow its closing quote
    if escaped:  # escaped quotes: those before a colon are inside strings
        return _keys(data) != _keys(written)
    return data.count(b'":') != written.count(b'":')  # and the writing has none either


def scan(data: bytes, doc: Any) -> Found | None:
    """The duplicates of `data` (decoded as `doc`); None when it has none."""
    if not possible(data, doc):
        return None
    found = find(data)
    return found if found.duplicates else None


def find(data: bytes) -> Found:
    """Every repeated key of the JSON text `data`, walking it in text order."""
    try:
        root = json.loads(data, object_pairs_hook=_Pairs)
    except (ValueError, RecursionError):  # refused elsewhere, with its own message
        return Found()
    found = Found()
    _walk(root, "", found, set(), 0)
    return found


def _walk(node: Any, path: str, found: Found, reported: set[str], ordinal: int) -> int:
    """Number the keys of `node` from `ordinal` on, in text order (a value's
    keys before its parent's next key), noting repeats; the last ordinal."""
    if isinstance(node, _Pairs):
        seen: set[str] = set()
        for key, value in node:
            here = f"{path}.{key}" if path else key
            ordinal += 1
            if key not in seen:
                seen.add(key)
                found.first.setdefault(here, ordinal)
            elif here not in reported and len(reported) < MAX_ERRORS:
                reported.add(here)
                found.duplicates.append((ordinal, here))
            if isinstance(value, list):
                ordinal = _walk(value, here, found, reported, ordinal)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            ordinal = _walk(item, f"{path}[{i}]", found, reported, ordinal)
    return ordinal
