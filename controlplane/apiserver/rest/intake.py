"""A request body, taken in: authorized from the URL, then read, then decoded off the loop.

Kubernetes authorizes a request in its filter chain, before the handler
reads a byte of the body: where the verb and the resource are known from
the URL (create, update, patch, delete of a resource; a subresource's own
verb), a caller without the right is refused 403 before its body is read,
so no identity without a grant can make the server decode anything. A node
is authorized later, with the objects its rules read (authorize_request).
A request RBAC allows as its index stands is let through on the event loop
(a dictionary lookup); any other is authorized on the executor, where a
refusal first waits for the indexes to catch up.
The body is then read with the size limit (body.read) and decoded, the keys it
repeats noted for fields.Write (body.decode_noting_repeats): a body of
at most INLINE_DECODE bytes on the event loop (tens of microseconds, less
than a trip to the executor costs), a larger one on the executor: a large or
hostile document costs one worker, not every connection.
"""

from __future__ import annotations

from typing import Any

from controlplane.api import jsoncodec
from controlplane.api.k8sproto import envelope
from controlplane.apiserver.rest import body
from controlplane.apiserver.rest.auditing import BODY
from controlplane.apiserver.rest.context import Call
from controlplane.apiserver.rest.status import UnsupportedMediaType

INLINE_DECODE = 8 * 1024  # bytes: a body this small is decoded on the event loop


async def document(
    call: Call, verb: str = "", media: str | None = None, api_version: str = "", kind: str = ""
) -> Any:
    """The decoded body; `verb` (the registry's: create, update_status, ...) is
    authorized first on the URL's resource, namespace and name ("": the
    handler's registry call authorizes it). A protobuf body only where the
    kind (the target's, or `api_version` and `kind`) has a protobuf message,
    else 415."""
    t = call.target
    if verb:
        await authorize(call, verb)
    media = body.media_type(call.request) if media is None else media
    api_version, kind = api_version or t.group_version, kind or t.info.kind
    if media == envelope.MEDIA_TYPE and not envelope.supported(api_version, kind):
        raise UnsupportedMediaType(
            f"{kind} ({api_version}) has no protobuf serialization: send application/json"
        )
    data = await body.read(call.request)
    # Repeated keys are noted unless fieldValidation=Ignore (fields.Write reports them).
    noting = call.query("fieldValidation", "Warn") != "Ignore"
    if len(data) <= INLINE_DECODE:
        doc, repeats = body.decode_noting_repeats(data, media, kind, noting)
    else:
        doc, repeats = await call.server.run(body.decode_noting_repeats, data, media, kind, noting)
    if repeats is not None:
        call.request[body.REPEATS] = repeats
    if media == envelope.MEDIA_TYPE and call.server.audit is not None:
        call.request[BODY] = jsoncodec.dumps(doc)  # the audit log's requestObject, as JSON
    return doc


async def authorize(call: Call, verb: str) -> None:
    """`verb` (the registry's) authorized on the URL's resource, namespace and
    name: Forbidden unless allowed."""
    t = call.target
    args = (call.who, verb, t.info, t.namespace or "", t.name)
    if not call.registry.request_allowed_now(*args):
        await call.server.run(call.registry.authorize_request, *args)


def write_verb(call: Call, verb: str) -> str:
    """update -> update_status on the status subresource (the registry's names)."""
    return f"{verb}_status" if call.target.subresource == "status" else verb
