"""Request bodies: read with a size limit, decoded as JSON or YAML (or, for
the review kinds kubectl sends that way, Kubernetes' protobuf: api/k8sprotobuf.py).

A body over limits.MAX_BODY (3 MiB, as kube-apiserver) is refused with 413
before it is all read; every body then passes limits.check_body (the gRPC
API's check) before it is decoded; malformed JSON or YAML is a 400 naming the
position; a document nested deeper than limits.MAX_DEPTH is a 422 (YAML's
nesting is checked once decoded). Nothing here touches the registry.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from aiohttp import web

from controlplane.api import jsoncodec, k8sprotobuf, limits
from controlplane.apiserver.rest.auditing import BODY
from controlplane.apiserver.rest.status import (
    BadRequest,
    RequestEntityTooLarge,
    UnsupportedMediaType,
)
from controlplane.client.errors import Invalid

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
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


async def read(request: web.Request) -> bytes:
    length = request.content_length
    if length is not None and length > limits.MAX_BODY:
        raise RequestEntityTooLarge(
            f"the request body is {length} bytes, more than the limit {limits.MAX_BODY}"
        )
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > limits.MAX_BODY:
            raise RequestEntityTooLarge(
                f"the request body is more than the limit of {limits.MAX_BODY} bytes"
            )
        chunks.append(chunk)
    data = b"".join(chunks)
    request[BODY] = data  # for the audit log's requestObject
    limits.check_body(data)
    return data


def media_type(request: web.Request) -> str:
    return request.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()


def decode(data: bytes, content_type: str) -> Any:
    """The document in `data`; BadRequest with the position when malformed."""
    if not data.strip():
        raise BadRequest("the request body is empty")
    if content_type in YAML_TYPES:
        try:
            doc = yaml.load(data, Loader=_Loader)  # a safe loader (CSafeLoader or SafeLoader)
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
    elif content_type == k8sprotobuf.MEDIA_TYPE:  # the review kinds only (kubectl in a pod)
        try:
            doc = k8sprotobuf.decode(data)
        except (ValueError, UnicodeDecodeError) as err:
            raise UnsupportedMediaType(f"protobuf body: {err}") from None
    else:
        raise UnsupportedMediaType(f"the body's media type {content_type!r} is not supported")
    check_depth(doc)
    return doc


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
