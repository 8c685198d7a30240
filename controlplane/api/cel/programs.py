"""A bounded cache of compiled programs, keyed by expression and variables:
rules and conditions are compiled once, not per request."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

from controlplane.api.cel.engine import CompileError, Program, compile

_LIMIT = 4096
_LOCK = threading.Lock()
_CACHE: OrderedDict[tuple[str, tuple[str, ...]], Program | CompileError] = OrderedDict()


_FAST: dict[tuple[str, tuple[str, ...]], Program] = {}


def program(source: str, variables: Iterable[str]) -> Program:
    """The compiled program, or CompileError (cached both ways)."""
    if isinstance(variables, tuple):  # the hot path: a caller's constant tuple
        hit = _FAST.get((source, variables))
        if hit is not None:
            return hit
    key = (source, tuple(sorted(set(variables))))
    with _LOCK:
        found = _CACHE.get(key)
        if found is not None:
            _CACHE.move_to_end(key)
    if found is None:
        try:
            found = compile(source, key[1])
        except CompileError as err:
            found = err
        with _LOCK:
            _CACHE[key] = found
            while len(_CACHE) > _LIMIT:
                _CACHE.popitem(last=False)
    if isinstance(found, CompileError):
        raise found
    if isinstance(variables, tuple):
        with _LOCK:
            if len(_FAST) >= _LIMIT:
                _FAST.clear()
            _FAST[(source, variables)] = found
    return found
