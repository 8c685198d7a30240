"""Request bodies: read with a size limit, decoded as JSON, YAML or
Kubernetes' protobuf (api/k8sproto: every built-in kind, as client-go and
kubectl 1.32+ send them).

A body over limits.MAX_BODY (3 MiB, as kube-apiserver) is refused with 413
before it is all read; every JSON or YAML body then passes
limits.check_body (the gRPC API's check) before it is decoded, a protobuf
body its size check (its nesting is bounded by its messages); malformed
JSON or YAML is a 400 naming the position; a document nested deeper than
limits.MAX_DEPTH is a 422 (YAML's nesting is checked as it is decoded). YAML
is decoded by api/yamlcodec.py with Kubernetes' bound on alias expansion (an
alias bomb is a 400, `yaml: document contains excessive aliasing`) and a
bound on the decoded size (413). A malformed protobuf body is a 400 naming
the field and the problem; one of a kind with no protobuf message (custom
resources) or with a content encoding is a 415. Decoding is CPU work:
handlers run `decode` on the executor (intake.py). Nothing here touches the
registry.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import yaml
from aiohttp import web

from controlplane.api import duplicates, jsoncodec, limits, yamlcodec
from controlplane.api.k8sproto import envelope
from controlplane.api.k8sproto.codec import ProtobufError
from controlplane.apiserver.rest.auditing import BODY
from controlplane.apiserver.rest.status import (
    BadRequest,
    RequestEntityTooLarge,
    UnsupportedMediaType,
)
from controlplane.client.errors import Invalid


@dataclass
class Repeats:
    """The keys a body repeats: JSON's with their paths and order, or the
    YAML decoder's lines (`line 5: key "name" already set in map`)."""

    json: duplicates.Found | None = None
    yaml: list[str] = field(default_factory=list)


REPEATS = web.RequestKey("repeats", Repeats)  # set by intake.document when a body has any

YAML_TYPES = frozenset({"application/yaml", "application/apply-patch+yaml", "text/yaml"})
JSON_TYPES = frozenset(
    {
        "application/json",
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/strategic-merge-patch+json",
        "",
        "*/*",
        "text/plain",
    }
)


async def read(request: web.Request) -> bytes:
    length = request.content_length
    if length is not None and length > limits.MAX_BODY:
        raise RequestEntityTooLarge(
            f"the request body is {length} bytes, more than the limit {limits.MAX_BODY}"
        )
    content = request.content
    if content.is_eof():  # all of it arrived with the head (a small body): taken at once
        data = content.read_nowait(-1)
        _check_read(len(data))
    else:
        chunks: list[bytes] = []
        size = 0
        async for chunk in content.iter_chunked(1 << 16):
            size += len(chunk)
            _check_read(size)
            chunks.append(chunk)
        data = b"".join(chunks)
    request[BODY] = data  # for the audit log's requestObject
    if media_type(request) == envelope.MEDIA_TYPE:
        limits.check_size(len(data))  # binary: no JSON nesting to count
    else:
        limits.check_body(data)
    return data


def _check_read(size: int) -> None:
    if size > limits.MAX_BODY:
        raise RequestEntityTooLarge(
            f"the request body is more than the limit of {limits.MAX_BODY} bytes"
        )


def is_protobuf(request: web.Request) -> bool:
    """Whether the body is Kubernetes' protobuf: its fields are the schema's
    and typed by the wire, so the JSON path's field check has nothing to find."""
    return media_type(request) == envelope.MEDIA_TYPE


def media_type(request: web.Request) -> str:
    """The body's media type, lower-case, without parameters ("" for none);
    each distinct header value is parsed once (a handler asks several times)."""
    return _media_type(request.headers.get("Content-Type", ""))


@lru_cache(maxsize=64)
def _media_type(header: str) -> str:
    return header.split(";", 1)[0].strip().lower()


def decode(data: bytes, content_type: str, kind: str = "") -> Any:
    """The document in `data`; BadRequest with the position when malformed.
    `kind`: the resource's Kind, named when its protobuf is refused."""
    return decode_noting_repeats(data, content_type, kind, False)[0]


def decode_noting_repeats(
    data: bytes, content_type: str, kind: str = "", noting: bool = True
) -> tuple[Any, Repeats | None]:
    """decode(), and (`noting`: fieldValidation is not Ignore) the keys the
    body repeats, None when it repeats none: JSON's found by
    api/duplicates.py (a few byte counts unless the text may repeat one),
    YAML's by its decoder as it goes. A protobuf body has none to note."""
    if not data.strip():
        raise BadRequest("the request body is empty")
    found: Repeats | None = None
    if content_type in YAML_TYPES:
        try:
            # Bounded: alias expansion as Kubernetes' decoder, nesting as the API's limit.
            doc, lines = yamlcodec.loads_noting_duplicates(data, limits.MAX_DEPTH)
            found = Repeats(yaml=lines) if lines else None
        except yamlcodec.DecodedTooLarge as err:
            raise RequestEntityTooLarge(str(err)) from None
        except yamlcodec.YAMLDecodeError as err:
            if "nested more than" in str(err):
                raise Invalid(str(err)) from None
            raise BadRequest(f"malformed YAML: {err}") from None
        except yaml.MarkedYAMLError as err:
            mark = err.problem_mark
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            raise BadRequest(f"malformed YAML{where}: {err.problem}") from err
        except yaml.YAMLError as err:
            raise BadRequest(f"malformed YAML: {err}") from err
    elif content_type in JSON_TYPES:
        try:
            doc = jsoncodec.loads(data)
        except (ValueError, UnicodeDecodeError, jsoncodec.DecodeError):
            raise BadRequest(_json_problem(data)) from None
    elif content_type == envelope.MEDIA_TYPE:
        try:
            doc = envelope.decode(data)
        except envelope.Unsupported as err:
            raise UnsupportedMediaType(f"the protobuf body{_of(kind)}: {err}") from None
        except ProtobufError as err:
            raise BadRequest(f"the protobuf body{_of(kind)} cannot be read: {err}") from None
        return doc, None
    else:
        raise UnsupportedMediaType(f"the body's media type {content_type!r} is not supported")
    # JSON with no more brackets than the limit cannot nest deeper: no walk.
    if content_type in YAML_TYPES or data.count(b"{") + data.count(b"[") > limits.MAX_DEPTH:
        check_depth(doc)
    if noting and content_type in JSON_TYPES:
        repeated = duplicates.scan(data, doc)
        found = Repeats(json=repeated) if repeated is not None else None
    return doc, found if noting else None


def _of(kind: str) -> str:
    return f" of a {kind}" if kind else ""


def _json_problem(data: bytes) -> str:
    try:
        json.loads(data)
    except RecursionError:
        raise Invalid(f"the document is nested more than {limits.MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError as err:
        return (
            f"malformed JSON at line {err.lineno}, column {err.colno} (byte {err.pos}): {err.msg}"
        )
    except (ValueError, UnicodeDecodeError) as err:
        return f"malformed JSON: {err}"
    return "malformed JSON"


def check_depth(doc: Any) -> None:
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limits.MAX_DEPTH:
            raise Invalid(f"the document is nested more than {limits.MAX_DEPTH} levels deep")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, dict | list))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, dict | list))


def as_object(doc: Any, what: str = "the request body") -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise BadRequest(f"{what} must be a JSON object, not {type(doc).__name__}")
    return doc
