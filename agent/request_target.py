"""An agent-endpoint request target, parsed once for the authorizer and the router.

The kubelet's mistake this avoids: authorizing one reading of the path and
serving another (`//stats/exec/NS/POD/C` is subresource `stats` to a check
that strips leading slashes, and host `stats` with path `/exec/...` to a URL
parser). `parse` accepts only an origin-form target (RFC 9112 section 3.2.1):
an absolute path, then an optional query. It refuses with 400, naming the
problem, anything else: the absolute form (`http://host/...`), `*`, an empty
segment (`//`), a `.` or `..` segment (also percent-encoded), a
percent-encoded `/` or `\\`, a NUL, bad percent-encoding, a fragment. What it
returns, the decoded segments and the query, is all that the authorizer
(webhook_auth.request_attributes) and the router (stream_targets.parse_target,
the summary) read; nothing reads the raw path after it.

Pure: no sockets, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote

_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_FORBIDDEN_ESCAPES = re.compile(r"%(2[Ff]|5[Cc]|00)")


class BadTarget(ValueError):
    """A request target the endpoint does not serve (answered 400)."""

    code = 400


@dataclass(frozen=True)
class RequestTarget:
    segments: tuple[str, ...]  # the path's segments, percent-decoded
    query: str  # the raw query, without "?"
    trailing_slash: bool = False

    @property
    def path(self) -> str:
        """The canonical path: what was authorized is what is served."""
        return (
            "/" + "/".join(self.segments) + ("/" if self.trailing_slash and self.segments else "")
        )

    def params(self) -> dict[str, list[str]]:
        return parse_qs(self.query, keep_blank_values=True)


def parse(raw: str) -> RequestTarget:
    """The target of a request line; BadTarget (400) for anything but origin-form."""
    if not raw.startswith("/"):
        raise BadTarget("request target: must be an absolute path (origin-form)")
    if "#" in raw:
        raise BadTarget("request target: a fragment is not allowed")
    path, _, query = raw.partition("?")
    if _BAD_ESCAPE.search(path):
        raise BadTarget("request target: malformed percent-encoding in the path")
    if _FORBIDDEN_ESCAPES.search(path):
        raise BadTarget("request target: an encoded '/', '\\' or NUL is not allowed in the path")
    if _BAD_ESCAPE.search(query):
        raise BadTarget("request target: malformed percent-encoding in the query")
    words = path[1:].split("/")
    trailing = len(words) > 1 and words[-1] == ""
    if trailing:
        words = words[:-1]
    if words == [""]:
        words = []
    segments: list[str] = []
    for word in words:
        if not word:
            raise BadTarget("request target: an empty path segment ('//') is not allowed")
        try:
            decoded = unquote(word, errors="strict")
        except UnicodeDecodeError:
            raise BadTarget("request target: the path is not UTF-8") from None
        if decoded in (".", ".."):
            raise BadTarget("request target: '.' and '..' segments are not allowed")
        if "\\" in decoded:
            raise BadTarget("request target: '\\' is not allowed in the path")
        segments.append(decoded)
    return RequestTarget(tuple(segments), query, trailing)
