"""Decoded parts of request bodies, by their bytes: a template's objects
decode their shared parts once.

The objects a controller creates from one template (a ReplicaSet's pods, a
Job's) arrive with the same spec, byte for byte; only their metadata
differ. A body's top-level sub-objects other than its metadata (spec,
status; a ConfigMap's data is a map, not one of them) of MIN_SIZE to
MAX_SIZE bytes are kept here as the JSON of what they decoded to, by their
decoder and bytes, and a later body with the same bytes gets them from
that JSON: one orjson decode instead of a walk field by field. Every
answer is a new object (the registry fills it in place). Bounded by
BUDGET bytes, oldest out first; a part orjson cannot write (an integer
past 64 bits in a RawExtension) is not kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controlplane.api import jsoncodec
from controlplane.api.k8sproto.fifo import Fifo

BUDGET = 4 << 20
MIN_SIZE = 64  # bytes: smaller parts decode about as fast as orjson reads them
MAX_SIZE = BUDGET // 8  # bytes: with its JSON, a larger part would not be kept

Decode = Callable[[bytes, int, int, int], Any]

_orjson = jsoncodec.orjson
_parts = Fifo(BUDGET)  # (decoder, depth, bytes) -> (JSON, size)


def part(decode: Decode, buf: bytes, pos: int, stop: int, depth: int) -> Any:
    """decode(buf, pos, stop, depth), from the JSON kept for the same bytes."""
    if not MIN_SIZE <= stop - pos <= MAX_SIZE or _orjson is None:
        return decode(buf, pos, stop, depth)
    key = (decode, depth, buf[pos:stop])
    found = _parts.items.get(key)
    if found is not None:
        return _orjson.loads(found[0])
    value = decode(buf, pos, stop, depth)
    try:
        data: bytes = _orjson.dumps(value)
    except TypeError:
        return value
    _parts.put(key, (data,), len(key[2]) + len(data))
    return value


def clear() -> None:
    _parts.clear()
