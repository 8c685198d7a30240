"""List: `<Kind>List` documents, streamed page by page when unlimited.

With `limit` (kubectl asks 500 at a time) one Registry.list call answers;
without, the registry's snapshot pages are written as they are read, so a
list of 100,000 objects is never one body in memory. Items are the stored
JSON with their resourceVersion written in. A Table is asked for with
`Accept: application/json;as=Table;g=meta.k8s.io` and made by
controlplane.apiserver.tables when this build has it. A client that prefers
protobuf gets the `<Kind>List` message (one body: client-go pages with
`limit` anyway).
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from controlplane.api import crd, jsoncodec
from controlplane.api.k8sproto import envelope
from controlplane.api.k8sproto import stored as pbstored
from controlplane.apiserver import tables
from controlplane.apiserver.codec import Stored, decode, with_version
from controlplane.apiserver.listing import ListResult
from controlplane.apiserver.rest import compression
from controlplane.apiserver.rest.context import Call
from controlplane.apiserver.rest.respond import (
    json_response,
    protobuf_response,
    served,
    wants_protobuf,
)
from controlplane.apiserver.rest.status import BadRequest
from controlplane.client.errors import Invalid

PAGE = 1000
TABLE_GROUP = "g=meta.k8s.io"


def wants_table(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    first = accept.split(",", 1)[0]
    return "as=Table" in first and TABLE_GROUP in first


def wants_metadata(request: web.Request) -> bool:
    """Whether the client asks for metadata only (`as=PartialObjectMetadata`
    or `...List`, group meta.k8s.io: client-go's metadata informers do)."""
    first = request.headers.get("Accept", "").split(",", 1)[0]
    return "as=PartialObjectMetadata" in first and TABLE_GROUP in first


def partial(obj: dict[str, Any]) -> dict[str, Any]:
    """An object as a meta.k8s.io/v1 PartialObjectMetadata."""
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata") or {}}  # fmt: skip


def _int(call: Call, name: str) -> int:
    text = call.query(name, "0") or "0"
    try:
        value = int(text)
    except ValueError:
        raise Invalid(f"{name}: {text!r} is not an integer") from None
    if value < 0:
        raise Invalid(f"{name}: must be >= 0")
    return value


def _head(call: Call, rev: int, continue_token: str = "") -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(rev)}
    if continue_token:
        meta["continue"] = continue_token
    t = call.target
    head = {"kind": f"{t.info.kind}List", "apiVersion": t.group_version, "metadata": meta}
    return jsoncodec.dumps(head)[:-1] + b',"items":['


def check_resource_version(call: Call) -> None:
    match = call.query("resourceVersionMatch")
    if match not in ("", "NotOlderThan", "Exact"):
        raise Invalid(
            f"resourceVersionMatch: unsupported value {match!r}: supported values: "
            "NotOlderThan, Exact"
        )
    rv = call.query("resourceVersion")
    if rv:
        try:
            int(rv)
        except ValueError:
            raise Invalid(f"resourceVersion: {rv!r} is not valid") from None
    if match and not rv:
        raise Invalid("resourceVersionMatch: requires resourceVersion")
    if match == "Exact" and rv != "0":
        # Reads are always of the latest revision: an exact older one is not kept.
        current = call.registry.store.current_revision()
        if int(rv) != current:
            raise Invalid(
                f"resourceVersionMatch=Exact: only the current resourceVersion ({current}) "
                "can be read"
            )


async def list_(call: Call) -> web.StreamResponse:
    t = call.target
    check_resource_version(call)
    limit = _int(call, "limit")
    cont = call.query("continue")
    label, field = call.query("labelSelector"), call.query("fieldSelector")
    if wants_table(call.request):
        include = include_object(call)

        def table() -> bytes:  # one executor hop: read, build, encode
            result = call.registry.list(
                t.info.key, call.namespace, label, field, limit, cont, call.who
            )
            with jsoncodec.paused_gc():
                return _table(call, result, include)

        return json_response(await call.server.run(table))
    if wants_metadata(call.request):

        def metadata() -> bytes:
            result = call.registry.list(
                t.info.key, call.namespace, label, field, limit, cont, call.who
            )
            meta: dict[str, Any] = {"resourceVersion": str(result.resource_version)}
            if result.continue_token:
                meta["continue"] = result.continue_token
            items = [partial(decode(d, r)) for d, r in result.items]
            return jsoncodec.dumps({"kind": "PartialObjectMetadataList",
                                    "apiVersion": "meta.k8s.io/v1", "metadata": meta,
                                    "items": items})  # fmt: skip

        return json_response(await call.server.run(metadata))
    if wants_protobuf(call, t.group_version, f"{t.info.kind}List"):

        def message() -> bytes:
            result = call.registry.list(
                t.info.key, call.namespace, label, field, limit, cont, call.who
            )
            return _protobuf(call, result)

        return protobuf_response(await call.server.run(message))
    if limit or cont:

        def document() -> bytes:
            result = call.registry.list(
                t.info.key, call.namespace, label, field, limit, cont, call.who
            )
            return _document(call, result)

        return json_response(await call.server.run(document))
    return await _stream(call, label, field)


def _items(call: Call, items: list[Stored]) -> bytes:
    conversion = call.target.conversion
    if conversion is None:
        return b",".join([with_version(d, r) for d, r in items])
    if conversion.from_stored_many is not None and items:  # one webhook call a page
        objs = conversion.from_stored_many([decode(d, r) for d, r in items])
        return b",".join([jsoncodec.dumps(obj) for obj in objs])
    return b",".join([served(d, r, conversion) for d, r in items])


def _document(call: Call, result: ListResult) -> bytes:
    items = _items(call, result.items)
    return _head(call, result.resource_version, result.continue_token) + items + b"]}"


def _protobuf(call: Call, result: ListResult) -> bytes:
    t = call.target
    conversion = t.conversion
    meta: dict[str, Any] = {"resourceVersion": str(result.resource_version)}
    if result.continue_token:
        meta["continue"] = result.continue_token
    if conversion is None:  # each stored version encoded once (k8sproto/stored.py)
        return pbstored.list_document(result.items, meta, t.group_version, t.info.kind)
    items = [decode(d, r) for d, r in result.items]
    if conversion is not None and conversion.from_stored_many is not None and items:
        items = conversion.from_stored_many(items)
    elif conversion is not None:
        items = [conversion.from_stored(item) for item in items]
    return envelope.encode_list(t.group_version, t.info.kind, items, meta)


def include_object(call: Call) -> str:
    """The request's includeObject (None, Metadata, Object), checked."""
    value = call.query("includeObject", "Metadata")
    if value not in tables.INCLUDE_OBJECT:
        raise BadRequest(
            f"includeObject: unsupported value {value!r}: supported values: "
            f"{', '.join(tables.INCLUDE_OBJECT)}"
        )
    return value


def _table(call: Call, result: ListResult, include: str) -> bytes:
    """The page as an encoded Table. Its decoded objects are garbage once it
    returns: the caller pauses the cyclic collector around it, so building
    a page of many objects is not interrupted by collections that would
    find nothing to free."""
    objects = [decode(d, r) for d, r in result.items]
    meta: dict[str, Any] = {"resourceVersion": str(result.resource_version)}
    if result.continue_token:
        meta["continue"] = result.continue_token
    return table_of(call, objects, include, meta)


def table_of(
    call: Call, objects: list[dict[str, Any]], include: str, meta: dict[str, Any] | None = None
) -> bytes:
    """An encoded Table of objects of the target's kind (a list's page, or
    the one object a get names: kube-apiserver answers both as a Table)."""
    return jsoncodec.dumps(table_document(call, objects, include, meta))


def table_document(
    call: Call, objects: list[dict[str, Any]], include: str, meta: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The Table of stored objects as the URL's version has them (a custom
    kind's: that version's columns, its objects converted)."""
    t = call.target
    columns = None
    if crd.is_custom(t.info.key):  # (built-in printers read the stored shape)
        objects = converted(call, objects)
        columns = crd.printer_columns(t.info.key, t.group_version.rpartition("/")[2])
    return tables.table(t.info.key, objects, include_object=include, list_metadata=meta,
                        printer_columns=columns)  # fmt: skip


def converted(call: Call, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stored objects as the URL's group/version has them (on the executor)."""
    conversion = call.target.conversion
    if conversion is None or not objects:
        return objects
    if conversion.from_stored_many is not None:
        return conversion.from_stored_many(objects)
    return [conversion.from_stored(obj) for obj in objects]


async def _stream(call: Call, label: str, field: str) -> web.StreamResponse:
    t = call.target
    pages = await call.server.run(
        call.registry.list_pages, t.info.key, call.namespace, label, field, call.who, PAGE
    )
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    loop = asyncio.get_running_loop()

    def pump() -> None:
        # One executor thread reads every page (store cursors stay on one
        # thread) and waits for each write: the socket paces the reading.
        first, items = True, False
        try:
            for page in pages:
                chunk = _items(call, page.items)
                if chunk and items:
                    chunk = b"," + chunk
                items = items or bool(chunk)
                if first:
                    chunk = _head(call, page.resource_version) + chunk
                    compression.stream(call.request, response, chunk)
                    asyncio.run_coroutine_threadsafe(response.prepare(call.request), loop).result()
                    first = False
                if chunk:
                    asyncio.run_coroutine_threadsafe(response.write(chunk), loop).result()
        finally:
            close = getattr(pages, "close", None)
            if close is not None:
                close()

    await call.server.run(pump)
    await response.write(b"]}")
    await response.write_eof()
    return response
