"""CRUD on one object, and deletecollection: get, create, update, delete.

Each handler decodes the request, calls one Registry method on the executor
and writes its answer (respond.py: JSON or protobuf, as negotiated); the
registry does every check. A protobuf body carries only the schema's fields,
typed by the wire, so it skips the JSON path's field check (as Kubernetes,
which has no strict decoding for protobuf).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from controlplane.api import jsoncodec
from controlplane.apiserver.codec import Stored, decode
from controlplane.apiserver.rest import body, fields, intake, lists
from controlplane.apiserver.rest.context import Call
from controlplane.apiserver.rest.respond import (
    converted_response,
    document_response,
    json_response,
    negotiate,
    protobuf_document,
    protobuf_response,
    wants_protobuf,
)
from controlplane.apiserver.rest.status import BadRequest, success
from controlplane.client.errors import NotFound
from controlplane.client.interface import DeleteOptions


def request_object(call: Call, doc: Any) -> dict[str, Any]:
    """The request's object as it will be stored."""
    obj = body.as_object(doc)
    conversion = call.target.conversion
    return obj if conversion is None else conversion.to_stored(obj)


async def stored_object(call: Call, doc: Any) -> dict[str, Any]:
    """request_object, on the executor when its conversion calls out (a webhook)."""
    conversion = call.target.conversion
    if conversion is not None and conversion.remote:
        return await call.server.run(request_object, call, doc)
    return request_object(call, doc)


async def get(call: Call) -> web.StreamResponse:
    t = call.target
    if lists.wants_table(call.request):  # kubectl get KIND NAME: one row
        include = lists.include_object(call)

        def table() -> bytes:
            data, rev = call.registry.get(t.info.key, t.name, call.namespace, call.who)
            meta = {"resourceVersion": str(rev)}  # the object's, as kube-apiserver's
            return lists.table_of(call, [decode(data, rev)], include, meta)

        return json_response(await call.server.run(table))
    if lists.wants_metadata(call.request):
        data, rev = await call.server.run(
            call.registry.get, t.info.key, t.name, call.namespace, call.who
        )
        return json_response(jsoncodec.dumps(lists.partial(decode(data, rev))))
    stored = await call.server.run(call.registry.get, t.info.key, t.name, call.namespace, call.who)
    return await converted_response(call, stored)


async def create(call: Call) -> web.StreamResponse:
    t = call.target
    doc = await intake.document(call, "create")
    negotiate(call)
    write = fields.Write(call)
    obj = await stored_object(call, doc)
    dry_run = call.dry_run()
    typed = body.is_protobuf(call.request)

    # A protobuf answer is encoded where the object was just built, while it
    # is in this CPU's caches: later, on the event loop, it cost twice as much.
    encode_here = (
        typed
        and not t.info.create_only
        and t.conversion is None
        and wants_protobuf(call, t.group_version, t.info.kind)
    )

    def create() -> tuple[Stored, bytes | None]:  # on the executor: the field checks cost CPU too
        if not t.info.create_only and not typed:  # reviews: not stored
            write.check(obj)
        stored = call.registry.create(t.info.key, obj, call.namespace, call.who, False, dry_run,
                                      write.field_manager(), typed and t.conversion is None)  # fmt: skip
        # The registry filled `obj` in place (copy_input=False) and stored it as it is.
        return stored, protobuf_document(call, stored, obj) if encode_here else None

    stored, document = await call.server.run(create)
    if document is not None:
        return write.headers(protobuf_response(document, 201))
    written = obj if typed and not t.info.create_only else None
    return write.headers(await converted_response(call, stored, 201, written))


async def update(call: Call) -> web.StreamResponse:
    t = call.target
    doc = await intake.document(call, intake.write_verb(call, "update"))
    negotiate(call)
    obj = await stored_object(call, doc)
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
    typed = body.is_protobuf(call.request)

    def update() -> Stored:  # on the executor: the field checks cost CPU too
        if not typed:
            write.check(obj)
        return call.registry.update(t.info.key, obj, t.subresource, call.who, False, dry_run,
                                    write.field_manager())  # fmt: skip

    stored = await call.server.run(update)
    return write.headers(await converted_response(call, stored))


async def delete_options(call: Call, verb: str = "") -> tuple[DeleteOptions, bool]:
    """DeleteOptions from the body (if any) and the query (which wins), and
    whether the delete is a dry run (`dryRun` in either: kubectl sends it in
    the body); `verb` is authorized first (intake.document)."""
    if verb:
        await intake.authorize(call, verb)
    raw = await body.read(call.request)
    opts: dict[str, Any] = {}
    if raw.strip():
        doc = await call.server.run(
            body.decode, raw, body.media_type(call.request), "DeleteOptions"
        )
        opts = body.as_object(doc, "DeleteOptions")
        if opts.get("kind") not in (None, "DeleteOptions"):
            raise BadRequest(f"the body is a {opts.get('kind')}, not DeleteOptions")
    return parse_delete_options(opts, call.request.query), call.dry_run(opts.get("dryRun"))


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


# Kinds whose DELETE answers the object even when it is gone at once
# (Kubernetes' registries with ReturnDeletedObject: client libraries expect one).
RETURN_DELETED = frozenset(("Pod", "ServiceAccount", "StorageClass"))


async def delete(call: Call) -> web.StreamResponse:
    t = call.target
    options, dry_run = await delete_options(call, "delete")
    negotiate(call)
    stored = await call.server.run(
        call.registry.delete, t.info.key, t.name, call.namespace, options, call.who, dry_run,
        t.info.key in RETURN_DELETED,
    )  # fmt: skip
    if stored is not None:  # still there (finalizers, a grace period), or a RETURN_DELETED kind
        return await converted_response(call, stored)
    return document_response(call, success(t.info.plural, t.name, t.group))


async def delete_collection(call: Call) -> web.StreamResponse:
    t = call.target
    options, dry_run = await delete_options(call)
    negotiate(call, "v1", "Status")
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
    return document_response(call, success(t.info.plural, "", t.group))
