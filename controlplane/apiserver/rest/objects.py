"""CRUD on one object, and deletecollection: get, create, update, delete.

Each handler decodes the request, calls one Registry method on the executor
and writes its answer; the registry does every check. Objects go out as the
stored JSON with the resourceVersion written in, never re-encoded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from controlplane.api import jsoncodec
from controlplane.api.kinds.definition import Conversion
from controlplane.apiserver.codec import Stored, decode, with_version
from controlplane.apiserver.rest import body, fields
from controlplane.apiserver.rest.context import Call
from controlplane.apiserver.rest.status import BadRequest, success
from controlplane.client.errors import NotFound
from controlplane.client.interface import DeleteOptions


def json_response(data: bytes, status: int = 200) -> web.Response:
    return web.Response(status=status, body=data, content_type="application/json")


def served(data: bytes, rev: int, conversion: Conversion | None) -> bytes:
    """The stored object as the client's group/version has it."""
    if conversion is None:
        return data if rev == 0 else with_version(data, rev)  # rev 0: a dry-run create
    return jsoncodec.dumps(conversion.from_stored(decode(data, rev or None)))


def object_response(
    stored: Stored, status: int = 200, conversion: Conversion | None = None
) -> web.Response:
    return json_response(served(stored[0], stored[1], conversion), status)


def request_object(call: Call, doc: Any) -> dict[str, Any]:
    """The request's object as it will be stored."""
    obj = body.as_object(doc)
    conversion = call.target.conversion
    return obj if conversion is None else conversion.to_stored(obj)


async def get(call: Call) -> web.StreamResponse:
    t = call.target
    stored = await call.server.run(call.registry.get, t.info.key, t.name, call.namespace, call.who)
    return object_response(stored, 200, t.conversion)


async def create(call: Call) -> web.StreamResponse:
    t = call.target
    doc = body.decode(await body.read(call.request), body.media_type(call.request))
    write = fields.Write(call)
    obj = request_object(call, doc)
    dry_run = call.dry_run()

    def create() -> Stored:  # on the executor: the field checks cost CPU too
        if not t.info.create_only:  # reviews: not stored
            write.check(obj)
        return call.registry.create(t.info.key, obj, call.namespace, call.who, False, dry_run,
                                    write.field_manager())  # fmt: skip

    stored = await call.server.run(create)
    return write.headers(object_response(stored, 201, t.conversion))


async def update(call: Call) -> web.StreamResponse:
    t = call.target
    doc = body.decode(await body.read(call.request), body.media_type(call.request))
    obj = request_object(call, doc)
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise BadRequest("metadata: must be an object")
    if meta.get("name") not in (None, "", t.name):
        raise BadRequest(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL "
            f"({t.name})"
        )
    meta["name"] = t.name
    if t.info.namespaced:
        if meta.get("namespace") not in (None, "", t.namespace):
            raise BadRequest(
                f"the namespace of the object ({meta.get('namespace')}) does not match the "
                f"namespace on the URL ({t.namespace})"
            )
        meta["namespace"] = t.namespace
    dry_run = call.dry_run()
    write = fields.Write(call)

    def update() -> Stored:  # on the executor: the field checks cost CPU too
        write.check(obj)
        return call.registry.update(t.info.key, obj, t.subresource, call.who, False, dry_run,
                                    write.field_manager())  # fmt: skip

    stored = await call.server.run(update)
    return write.headers(object_response(stored, 200, t.conversion))


async def delete_options(call: Call) -> DeleteOptions:
    """DeleteOptions from the body (if any) and the query (which wins)."""
    raw = await body.read(call.request)
    opts: dict[str, Any] = {}
    if raw.strip():
        opts = body.as_object(body.decode(raw, body.media_type(call.request)), "DeleteOptions")
    return parse_delete_options(opts, call.request.query)


def parse_delete_options(opts: dict[str, Any], q: Mapping[str, str]) -> DeleteOptions:
    """DeleteOptions from a body's fields and the query (which wins)."""
    grace: Any = q.get("gracePeriodSeconds", opts.get("gracePeriodSeconds"))
    policy = q.get("propagationPolicy", opts.get("propagationPolicy"))
    orphan = q.get("orphanDependents", opts.get("orphanDependents"))
    if policy is None and orphan is not None:
        policy = "Orphan" if str(orphan).lower() == "true" else "Background"
    preconditions = opts.get("preconditions") or {}
    if not isinstance(preconditions, dict):
        raise BadRequest("preconditions: must be an object")
    try:
        grace_seconds = None if grace is None else int(grace)
    except (TypeError, ValueError):
        raise BadRequest(f"gracePeriodSeconds: {grace!r} is not an integer") from None
    return DeleteOptions(
        grace_period_seconds=grace_seconds,
        propagation_policy=str(policy) if policy else None,
        precondition_uid=preconditions.get("uid") or None,
        precondition_resource_version=preconditions.get("resourceVersion") or None,
    )


async def delete(call: Call) -> web.StreamResponse:
    t = call.target
    options = await delete_options(call)
    dry_run = call.dry_run()
    stored = await call.server.run(
        call.registry.delete, t.info.key, t.name, call.namespace, options, call.who, dry_run
    )
    if stored is not None:  # still there: finalizers or a grace period hold it
        return object_response(stored, 200, t.conversion)
    return json_response(jsoncodec.dumps(success(t.info.plural, t.name, t.group)))


async def delete_collection(call: Call) -> web.StreamResponse:
    t = call.target
    options = await delete_options(call)
    dry_run = call.dry_run()
    label = call.query("labelSelector")
    field = call.query("fieldSelector")

    def delete_all() -> None:
        result = call.registry.list(t.info.key, call.namespace, label, field, 0, "", call.who)
        for data, _rev in result.items:
            meta = decode(data).get("metadata") or {}
            try:
                call.registry.delete(
                    t.info.key, meta.get("name", ""), meta.get("namespace") or None,
                    options, call.who, dry_run,
                )  # fmt: skip
            except NotFound:
                pass

    await call.server.run(delete_all)
    return json_response(jsoncodec.dumps(success(t.info.plural, "", t.group)))
