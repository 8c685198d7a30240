"""Fast JSON for objects on the wire and in storage: orjson when installed, else json.

Both produce compact UTF-8 JSON that the other reads, so the choice is a
matter of speed only (orjson decodes about 3-4x faster, which is most of
the cost of a big List). Never used for anything but plain JSON data.
Integers are 64-bit, as in Kubernetes: orjson reads larger ones as floats.
"""

from __future__ import annotations

import copy
import gc
import importlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

orjson: Any
try:
    # Imported by name so the type checker does not need orjson installed.
    orjson = importlib.import_module("orjson")
except ImportError:  # pragma: no cover - the stdlib path
    orjson = None


T = TypeVar("T")


def dumps(obj: Any) -> bytes:
    if orjson is not None:
        try:
            data: bytes = orjson.dumps(obj)
            return data
        except TypeError:
            pass  # e.g. integers beyond 64 bits: let json produce them
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def loads(data: bytes | str) -> Any:
    if orjson is not None:
        return orjson.loads(data)
    return json.loads(data)


def loads_or_none(text: Any) -> Any:
    """JSON text a user wrote (an annotation's value), decoded by the standard
    library; None when `text` is not a string or not JSON."""
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def clone(obj: T) -> T:
    """A deep copy of JSON data (dicts with string keys, lists, strings, numbers,
    booleans, None): a round trip through orjson, many times faster than
    copy.deepcopy; anything orjson refuses (integers beyond 64 bits) is
    deep-copied the slow way."""
    if orjson is not None:
        try:
            copied: T = orjson.loads(orjson.dumps(obj))
            return copied
        except TypeError:
            pass
    return copy.deepcopy(obj)


DecodeError: type[Exception] = orjson.JSONDecodeError if orjson is not None else ValueError


_gc_lock = threading.Lock()
_gc_pausers = 0


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many objects at once.

    Decoding a List of 100,000 objects allocates millions of containers; with
    the collector running, each young-generation pass rescans them, which
    doubles the time. Nested and concurrent users are counted; the collector
    is re-enabled (if it was enabled) when the last one leaves.
    """
    global _gc_pausers
    with _gc_lock:
        if _gc_pausers == 0:
            _paused_state[0] = gc.isenabled()
            gc.disable()
        _gc_pausers += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pausers -= 1
            if _gc_pausers == 0 and _paused_state[0]:
                if gc.get_count()[0] > PROMOTE_AFTER:
                    # Many new containers, most of them kept (a decoded List):
                    # move every young object to the oldest generation at once
                    # (freeze + unfreeze: no traversal), instead of scanning them
                    # all twice on their way there. Young garbage, if any, is
                    # collected by the next full collection.
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()


_paused_state = [True]
PROMOTE_AFTER = 100_000  # young objects allocated while paused

# The collector's thresholds for a server process that keeps many decoded
# objects and makes many short-lived ones per request (gc.set_threshold:
# young collection after so many new containers, then every so many young
# and middle collections). CPython's default, (700, 10, 10), collects the
# young generation every 700 new containers, so objects that live for one
# request (a decoded body, its answer) survive into the older generations,
# whose growth by a quarter triggers a full collection of the whole heap.
# In bench.volcano's end-to-end run that was 21% of the control plane's CPU
# time (12.6 s of 61 s), charged to whatever allocated at that moment
# (jsoncodec.loads and clone, serviceaccounts.access_volume: their "self"
# time in a profile); with these, 1.4 s. JSON data holds no reference
# cycles: reference counting frees it, the collector only looks.
SERVER_GC_THRESHOLDS = (50_000, 20, 10)


def tune_gc(thresholds: tuple[int, int, int] = SERVER_GC_THRESHOLDS) -> None:
    """Set the process's collector thresholds (see SERVER_GC_THRESHOLDS)."""
    gc.set_threshold(*thresholds)
