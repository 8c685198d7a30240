"""Subresources beyond status: scale (autoscaling/v1 Scale), binding, eviction.

status goes through objects/patch with the subresource named (the registry
knows it). scale reads and writes the owner's spec.replicas through the
registry's scale methods; a PATCH of a Scale is applied to the Scale and
its replicas written. binding is the scheduler's pods/binding; eviction
deletes the pod with the Eviction's DeleteOptions (skiff has no
PodDisruptionBudgets to honour).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from controlplane.api import jsoncodec
from controlplane.apiserver.rest import body
from controlplane.apiserver.rest.context import Call
from controlplane.apiserver.rest.objects import json_response, parse_delete_options
from controlplane.apiserver.rest.patch import PATCH_TYPES, builder
from controlplane.apiserver.rest.status import BadRequest, MethodNotAllowed, success
from controlplane.apiserver.subresources import PodBinding
from controlplane.client.errors import ApiError, Invalid


def _replicas(scale: Any) -> int:
    spec = scale.get("spec") if isinstance(scale, dict) else None
    replicas = (spec or {}).get("replicas") if isinstance(spec, dict) else None
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise Invalid(f"spec.replicas: must be an integer, got {replicas!r}")
    return replicas


async def scale(call: Call) -> web.StreamResponse:
    t = call.target
    reg = call.registry
    ns = call.namespace
    method = call.request.method
    if method == "GET":
        current = await call.server.run(reg.get_scale, t.info.kind, t.name, ns, call.who)
        return json_response(jsoncodec.dumps(current))
    if method == "PUT":
        doc = body.as_object(
            body.decode(await body.read(call.request), body.media_type(call.request))
        )
        replicas = _replicas(doc)
    elif method == "PATCH":
        media = body.media_type(call.request)
        if media not in PATCH_TYPES:
            builder(call, media, None)
        doc = body.decode(await body.read(call.request), media)
        current = await call.server.run(reg.get_scale, t.info.kind, t.name, ns, call.who)
        replicas = _replicas(builder(call, media, doc)(current))
    else:
        raise MethodNotAllowed(f"{method} is not allowed on {t.info.plural}/scale")
    result = await call.server.run(reg.update_scale, t.info.kind, t.name, ns, replicas, call.who)
    return json_response(jsoncodec.dumps(result))


async def binding(call: Call) -> web.StreamResponse:
    t = call.target
    doc = body.as_object(body.decode(await body.read(call.request), body.media_type(call.request)))
    target = doc.get("target") or {}
    meta = doc.get("metadata") or {}
    if not isinstance(target, dict) or not isinstance(meta, dict):
        raise BadRequest("target and metadata must be objects")
    if meta.get("name") not in (None, "", t.name):
        raise BadRequest(f"metadata.name: {meta.get('name')!r} does not match the pod ({t.name})")
    annotations = meta.get("annotations")
    bind = PodBinding(
        t.namespace, t.name, str(target.get("name") or ""), str(meta.get("uid") or ""),
        annotations if isinstance(annotations, dict) else None,
    )  # fmt: skip
    (outcome,) = await call.server.run(call.registry.bind_many, [bind], call.who)
    if isinstance(outcome, ApiError):
        raise outcome
    return json_response(jsoncodec.dumps(success("pods", t.name)), 201)


async def eviction(call: Call) -> web.StreamResponse:
    t = call.target
    doc = body.as_object(body.decode(await body.read(call.request), body.media_type(call.request)))
    opts = doc.get("deleteOptions") or {}
    if not isinstance(opts, dict):
        raise BadRequest("deleteOptions: must be an object")
    options = parse_delete_options(opts, {})
    dry_run = call.dry_run()
    await call.server.run(
        call.registry.delete, "Pod", t.name, call.namespace, options, call.who, dry_run
    )
    return json_response(jsoncodec.dumps(success("pods", t.name)), 201)
