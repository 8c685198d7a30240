"""Content negotiation: which serialization a response is written in.

As kube-apiserver: the `Accept` header's media ranges are taken in order of
their q-values (ties in the order written; q=0 never), and the first one the
server can write wins: `application/vnd.kubernetes.protobuf` for a kind
that has a protobuf message, JSON for `application/json`, `*/*`,
`application/*` and the YAML and JSON variants skiff answers as JSON. A
range asking for a Table (`as=Table`) is the table code's (tables stay
JSON); a custom resource has no protobuf, so a client that accepts only
protobuf for one gets 406 NotAcceptable, as does an Accept with nothing
skiff can write. No Accept (or an empty one) means JSON.
"""

from __future__ import annotations

from functools import lru_cache

from controlplane.api.k8sproto import envelope
from controlplane.apiserver.rest.status import NotAcceptable

PROTOBUF = envelope.MEDIA_TYPE
JSON = "application/json"
_JSONISH = frozenset({"application/json", "*/*", "application/*", "application/yaml",
                      "text/yaml", "application/json-seq"})  # fmt: skip
_STREAM_PARAMS = frozenset({"stream"})


@lru_cache(maxsize=256)
def ranges(accept: str) -> tuple[tuple[str, frozenset[tuple[str, str]]], ...]:
    """The media ranges of an Accept header, best first: (type, parameters)."""
    found: list[tuple[float, int, str, frozenset[tuple[str, str]]]] = []
    for index, part in enumerate(accept.split(",")):
        media, *params = (p.strip() for p in part.split(";"))
        if not media:
            continue
        q = 1.0
        kept = []
        for param in params:
            name, _, value = param.partition("=")
            name = name.strip().lower()
            if name == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
            elif name:
                kept.append((name, value.strip().strip('"')))
        if q > 0:
            found.append((-q, index, media.lower(), frozenset(kept)))
    found.sort()
    return tuple((media, params) for _, _, media, params in found)


def choose(accept: str, protobuf_ok: bool) -> str:
    """PROTOBUF or JSON for an object, list or Status response."""
    if not accept.strip():
        return JSON
    listed = ranges(accept)
    for media, params in listed:
        if any(name == "as" for name, _ in params):
            return JSON  # a Table or metadata-only view: JSON
        if media == PROTOBUF:
            if protobuf_ok:
                return PROTOBUF
            continue
        if media in _JSONISH:
            return JSON
    if not listed:
        return JSON
    raise NotAcceptable(
        "only the following media types are accepted: application/json, application/yaml"
        + (", application/vnd.kubernetes.protobuf" if protobuf_ok else "")
    )


def prefers_protobuf(accept: str) -> bool:
    """Whether a Status (an error) goes out as protobuf: never a 406 for it."""
    try:
        return choose(accept, True) == PROTOBUF
    except NotAcceptable:
        return False
