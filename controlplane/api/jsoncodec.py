"""Fast JSON for objects on the wire and in storage: orjson when installed, else json.

Both produce compact UTF-8 JSON that the other reads, so the choice is a
matter of speed only (orjson decodes about 3-4x faster, which is most of
the cost of a big List). Never used for anything but plain JSON data.
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - the stdlib path
    orjson = None  # type: ignore[assignment]


def dumps(obj: Any) -> bytes:
    if orjson is not None:
        try:
            return orjson.dumps(obj)
        except TypeError:
            pass  # e.g. integers beyond 64 bits: let json produce them
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def loads(data: bytes | str) -> Any:
    if orjson is not None:
        return orjson.loads(data)
    return json.loads(data)


DecodeError: type[Exception] = orjson.JSONDecodeError if orjson is not None else ValueError
