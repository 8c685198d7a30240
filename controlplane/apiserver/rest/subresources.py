"""Subresources beyond status: scale (autoscaling/v1 Scale), binding, eviction
and serviceaccounts/token.

status goes through objects/patch with the subresource named (the registry
knows it). scale reads and writes the owner's spec.replicas through the
registry's scale methods; a PATCH of a Scale is applied to the Scale and
its replicas written. binding is the scheduler's pods/binding; eviction
deletes the pod with the Eviction's DeleteOptions when its
PodDisruptionBudget allows (controlplane/apiserver/eviction.py). serviceaccounts/NAME/token creates a
TokenRequest named after the account through the registry's create, which
authorizes and answers it (controlplane.apiserver.reviews).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from controlplane.api import crd
from controlplane.apiserver import eviction as eviction_api
from controlplane.apiserver.codec import decode
from controlplane.apiserver.rest import body, fields, intake
from controlplane.apiserver.rest.context import Call
from controlplane.apiserver.rest.objects import parse_delete_options
from controlplane.apiserver.rest.patch import PATCH_TYPES, builder
from controlplane.apiserver.rest.respond import document_response, negotiate
from controlplane.apiserver.rest.status import BadRequest, MethodNotAllowed, success
from controlplane.apiserver.subresources import PodBinding
from controlplane.client.errors import ApiError, Invalid, NotFound


def _replicas(scale: Any) -> int:
    """spec.replicas; left out is 0, as Go writes a Scale of 0 replicas."""
    spec = scale.get("spec") if isinstance(scale, dict) else None
    replicas = (spec or {}).get("replicas", 0) if isinstance(spec, dict) else None
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise Invalid(f"spec.replicas: must be an integer, got {replicas!r}")
    return replicas


def _custom_scale(call: Call) -> Any:
    """The Scale of a custom object (its CRD's scale paths)."""
    t = call.target
    data, rev = call.registry.get(t.info.key, t.name, call.namespace, call.who)
    found = crd.scale_of(t.info.key, decode(data, rev))
    if found is None:
        raise NotFound(f"{t.info.resource} have no scale subresource")
    return found


def _custom_rescale(call: Call, replicas: int, dry_run: bool) -> Any:
    t = call.target
    if replicas < 0:
        raise Invalid(f'Scale "{t.name}" is invalid: spec.replicas: must be >= 0')
    patch = crd.replicas_patch(t.info.key, replicas)
    if patch is None:
        raise NotFound(f"{t.info.resource} have no scale subresource")
    data, rev = call.registry.patch(t.info.key, t.name, patch, call.namespace, "", call.who,
                                    dry_run, fields.Write(call).field_manager())  # fmt: skip
    return crd.scale_of(t.info.key, decode(data, rev))


async def scale(call: Call) -> web.StreamResponse:
    t = call.target
    reg = call.registry
    ns = call.namespace
    method = call.request.method
    custom = crd.is_custom(t.info.key)
    get_scale = (lambda: _custom_scale(call)) if custom else (
        lambda: reg.get_scale(t.info.key, t.name, ns, call.who))  # fmt: skip
    if method == "GET":
        current = await call.server.run(get_scale)
        return document_response(call, current)
    if method == "PUT":
        doc = body.as_object(
            await intake.document(call, api_version="autoscaling/v1", kind="Scale")
        )
        replicas = _replicas(doc)
    elif method == "PATCH":
        media = body.media_type(call.request)
        if media not in PATCH_TYPES:
            builder(call, media, None)
        doc = await intake.document(call, media=media)
        current = await call.server.run(get_scale)
        replicas = _replicas(builder(call, media, doc)(current))
    else:
        raise MethodNotAllowed(f"{method} is not allowed on {t.info.plural}/scale")
    negotiate(call, "autoscaling/v1", "Scale")
    dry_run = call.dry_run()
    if custom:
        result = await call.server.run(_custom_rescale, call, replicas, dry_run)
    else:
        result = await call.server.run(
            reg.update_scale, t.info.key, t.name, ns, replicas, call.who,
            fields.Write(call).field_manager(), dry_run,
        )  # fmt: skip
    return document_response(call, result)


async def binding(call: Call) -> web.StreamResponse:
    """pods/NAME/binding, or POST namespaces/NS/bindings naming the pod in
    metadata.name (Kubernetes' BindingREST serves both)."""
    t = call.target
    doc = body.as_object(await intake.document(call, api_version="v1", kind="Binding"))
    negotiate(call, "v1", "Status")
    target = doc.get("target") or {}
    meta = doc.get("metadata") or {}
    if not isinstance(target, dict) or not isinstance(meta, dict):
        raise BadRequest("target and metadata must be objects")
    pod = t.name if t.info.key == "Pod" else str(meta.get("name") or "")
    if not pod:
        raise Invalid('Binding "" is invalid: metadata.name: Required value: name or '
                      "generateName is required")  # fmt: skip
    if meta.get("name") not in (None, "", pod):
        raise BadRequest(f"metadata.name: {meta.get('name')!r} does not match the pod ({pod})")
    if target.get("kind") not in (None, "", "Node"):
        raise Invalid(f'Binding "{pod}" is invalid: target.kind: Unsupported value: '
                      f'"{target.get("kind")}": supported values: "Node", "<empty>"')  # fmt: skip
    annotations = meta.get("annotations")
    bind = PodBinding(
        t.namespace, pod, str(target.get("name") or ""), str(meta.get("uid") or ""),
        annotations if isinstance(annotations, dict) else None,
    )  # fmt: skip
    dry_run = call.dry_run()
    (outcome,) = await call.server.run(call.registry.bind_many, [bind], call.who, dry_run)
    if isinstance(outcome, ApiError):
        raise outcome
    return document_response(call, success("pods", pod), 201)


async def eviction(call: Call) -> web.StreamResponse:
    t = call.target
    doc = body.as_object(await intake.document(call, api_version="policy/v1", kind="Eviction"))
    negotiate(call, "v1", "Status")
    opts = doc.get("deleteOptions") or {}
    if not isinstance(opts, dict):
        raise BadRequest("deleteOptions: must be an object")
    options = parse_delete_options(opts, {})
    dry_run = call.dry_run(opts.get("dryRun"))
    await call.server.run(
        eviction_api.evict, call.registry, call.namespace, t.name, options, call.who, dry_run
    )
    return document_response(call, success("pods", t.name), 201)


async def token_request(call: Call) -> web.StreamResponse:
    t = call.target
    doc = body.as_object(
        await intake.document(call, api_version="authentication.k8s.io/v1", kind="TokenRequest")
    )
    negotiate(call, "authentication.k8s.io/v1", "TokenRequest")
    meta = doc.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise BadRequest("metadata: must be an object")
    if meta.get("name") not in (None, "", t.name):
        raise BadRequest(
            f"metadata.name: {meta.get('name')!r} does not match the service account ({t.name})"
        )
    meta["name"] = t.name
    stored = await call.server.run(
        call.registry.create, "TokenRequest", doc, call.namespace, call.who, False, call.dry_run()
    )
    return document_response(call, decode(stored[0]), 201)
