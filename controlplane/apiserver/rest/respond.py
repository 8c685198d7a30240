"""Writing answers: an object, a document or a Status, as JSON or protobuf.

The serialization is the Accept header's choice (negotiation.choose). JSON
objects go out as the stored JSON with the resourceVersion written in,
never re-encoded; protobuf ones are the stored object written as its
kind's message in the `k8s\\x00` envelope, once per stored version
(api/k8sproto/stored.py keeps them: a create's answer serves its later
gets, list items and watch events). Errors are
metav1.Status in whichever of the two the client prefers.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from controlplane.api import jsoncodec
from controlplane.api.k8sproto import envelope
from controlplane.api.k8sproto import stored as pbstored
from controlplane.api.kinds.definition import Conversion
from controlplane.apiserver.codec import Stored, decode, with_version
from controlplane.apiserver.rest import negotiation
from controlplane.apiserver.rest.context import Call
from controlplane.apiserver.rest.status import error_response, status_object
from controlplane.client import errors


def json_response(data: bytes, status: int = 200) -> web.Response:
    # Go's json.Encoder ends each document with a newline; clients compare bytes.
    return web.Response(status=status, body=data + b"\n", content_type="application/json")


def protobuf_response(data: bytes, status: int = 200) -> web.Response:
    response = web.Response(status=status, body=data)
    response.headers["Content-Type"] = envelope.MEDIA_TYPE
    return response


def served(data: bytes, rev: int, conversion: Conversion | None) -> bytes:
    """The stored object as the client's group/version has it."""
    if conversion is None:
        return data if rev == 0 else with_version(data, rev)  # rev 0: a dry-run create
    return jsoncodec.dumps(conversion.from_stored(decode(data, rev or None)))


def accept(call: Call) -> str:
    return call.request.headers.get("Accept", "")


def wants_protobuf(call: Call, api_version: str, kind: str) -> bool:
    """Whether this answer goes out as protobuf (406 when nothing acceptable)."""
    ok = envelope.supported(api_version, kind)
    return negotiation.choose(accept(call), ok) == negotiation.PROTOBUF


def negotiate(call: Call, api_version: str = "", kind: str = "") -> None:
    """406 unless the client accepts a serialization of the answer (the
    target's kind, or `api_version` and `kind`: a Scale, a Status). A write
    handler asks before it writes, as kube-apiserver's handlers negotiate
    their output first: a 406 stores nothing."""
    t = call.target
    wants_protobuf(call, api_version or t.group_version, kind or t.info.kind)


def object_response(
    call: Call,
    stored: Stored,
    status: int = 200,
    written: dict[str, Any] | None = None,
    converted: bytes | None = None,
) -> web.Response:
    """The target's object, as stored (and converted to the URL's version).
    `written`: the very dict the registry stored (a create's own request
    object, which it fills in place), spared a decode of the stored JSON.
    `converted`: the object already converted (off the loop: a webhook's)."""
    t = call.target
    if wants_protobuf(call, t.group_version, t.info.kind):
        if t.conversion is None:  # each stored version encoded once (k8sproto/stored.py)
            return protobuf_response(protobuf_document(call, stored, written), status)
        obj = jsoncodec.loads(converted or served(stored[0], stored[1], t.conversion))
        return protobuf_response(envelope.encode(obj, t.group_version, t.info.kind), status)
    return json_response(converted or served(stored[0], stored[1], t.conversion), status)


def protobuf_document(call: Call, stored: Stored, written: dict[str, Any] | None = None) -> bytes:
    """The target's object as stored, as a protobuf document (its kind has a
    message, its version needs no conversion); `written` as object_response."""
    t = call.target
    if written is not None:
        meta = written.get("metadata")
        if isinstance(meta, dict) and stored[1]:
            written = {**written, "metadata": {**meta, "resourceVersion": str(stored[1])}}
    return pbstored.document(stored[0], stored[1], t.group_version, t.info.kind, written)


async def converted_response(
    call: Call, stored: Stored, status: int = 200, written: dict[str, Any] | None = None
) -> web.Response:
    """object_response, with a conversion that calls out (a CRD's conversion
    webhook) run on the executor: it never holds the event loop."""
    conversion = call.target.conversion
    if conversion is not None and conversion.remote:
        data = await call.server.run(served, stored[0], stored[1], conversion)
        return object_response(call, stored, status, None, data)
    return object_response(call, stored, status, written)


def document_response(call: Call, doc: dict[str, Any], status: int = 200) -> web.Response:
    """A document of its own apiVersion and kind (Scale, TokenRequest, Status)."""
    api_version, kind = str(doc.get("apiVersion") or ""), str(doc.get("kind") or "")
    if wants_protobuf(call, api_version, kind):
        return protobuf_response(envelope.encode(doc, api_version, kind), status)
    return json_response(jsoncodec.dumps(doc), status)


def error(
    request: web.Request, err: errors.ApiError, kind: str = "", name: str = "", group: str = ""
) -> web.Response:
    """The Status of an error, in the serialization the client prefers."""
    answer = error_response(err, kind, name, group)
    if negotiation.prefers_protobuf(request.headers.get("Accept", "")):
        code, doc = status_object(err, kind, name, group)
        pb = protobuf_response(envelope.status(doc), code)
        if "Retry-After" in answer.headers:
            pb.headers["Retry-After"] = answer.headers["Retry-After"]
        return pb
    return answer
