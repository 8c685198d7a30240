"""JSON for the plugin's hot path without importing `json` (which pulls in
`re`, `enum` and friends, several milliseconds per plugin invocation).

It drives the same C accelerators that `json` uses (`_json.make_scanner`,
`_json.make_encoder`), so parsing and output are the standard library's.
It must never be used where `json` is already imported anyway.
"""

from __future__ import annotations

import _json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_WS = " \t\n\r"


class _Ctx:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = None
    memo: dict[str, str] = {}


class JSONError(ValueError):
    """The text is not one JSON value."""


_scan = _json.make_scanner(_Ctx())  # type: ignore[arg-type]


def _default(obj: object) -> object:
    raise TypeError(f"Object of type {obj.__class__.__name__} is not JSON serializable")


_ascii = _json.encode_basestring_ascii
_enc = _json.make_encoder(None, _default, _ascii, None, ": ", ", ", False, False, True)
_enc_compact = _json.make_encoder(None, _default, _ascii, None, ":", ",", False, False, True)


def loads(text: str | bytes) -> Any:
    """Parse exactly one JSON value; raise JSONError otherwise."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONError(f"not UTF-8: {exc}") from None
    start = 0
    n = len(text)
    while start < n and text[start] in _WS:
        start += 1
    try:
        value, end = _scan(text, start)
    except Exception:
        _Ctx.memo.clear()
        # Only on bad input: the standard module for an exact message.
        import json

        try:
            return json.loads(text)
        except ValueError as exc:
            raise JSONError(str(exc)) from None
    while end < n and text[end] in _WS:
        end += 1
    if end != n:
        raise JSONError(f"extra data at char {end}")
    _Ctx.memo.clear()
    return value


def dumps(value: Any, compact: bool = False) -> str:
    """Serialise dicts, lists, strings, numbers, booleans and None."""
    return "".join((_enc_compact if compact else _enc)(value, 0))
