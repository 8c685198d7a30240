"""PATCH in its four flavours, each a function old -> new run by the registry.

The content type picks the flavour: JSON merge patch, JSON patch (RFC 6902),
strategic merge patch, server-side apply (`application/apply-patch+yaml`,
with `fieldManager` and `force`). Whatever the flavour, the registry applies
it inside its write loop (`Registry.patch_with`), so validation, admission,
authorization and conflicts are the same for all. An apply of an object that
does not exist creates it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aiohttp import web

from controlplane.api import crd, json_patch, pruning, restore, server_side_apply, strategic_merge
from controlplane.api.merge_patch import merge_patch
from controlplane.apiserver.rest import body, fields, intake, queryparams
from controlplane.apiserver.rest.context import Call
from controlplane.apiserver.rest.respond import converted_response, negotiate
from controlplane.apiserver.rest.status import (
    BadRequest,
    RequestEntityTooLarge,
    UnsupportedMediaType,
)
from controlplane.client.errors import Invalid, NotFound

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE, STRATEGIC, APPLY)

Object = dict[str, Any]


def builder(call: Call, media: str, doc: Any) -> Callable[[Object | None], Object]:
    """The function old -> new that this patch is (old None: no object yet)."""
    kind = call.target.info.key
    if media == MERGE:
        if not isinstance(doc, dict):
            raise BadRequest("a JSON merge patch must be a JSON object")
        return lambda old: _decoded(merge_patch(old or {}, doc))
    if media == JSON_PATCH:
        if not isinstance(doc, list):
            # jsonpatch.DecodePatch's error, a 400 as Kubernetes answers it.
            raise BadRequest(
                f"json: cannot unmarshal {_json_type(doc)} into Go value of type jsonpatch.Patch"
            )
        if len(doc) > json_patch.MAX_OPERATIONS:
            raise RequestEntityTooLarge(
                f"The allowed maximum operations in a JSON patch is {json_patch.MAX_OPERATIONS}, "
                f"got {len(doc)}"
            )
        return lambda old: _json_patch(old, doc)
    if media == STRATEGIC:
        if crd.is_custom(kind):
            raise UnsupportedMediaType(
                "strategic merge patch is not supported for custom resources: use one of "
                f"{', '.join(p for p in PATCH_TYPES if p != STRATEGIC)}"
            )
        if not isinstance(doc, dict):
            raise BadRequest("a strategic merge patch must be a JSON object")
        return lambda old: _restored(strategic_merge.apply(old or {}, doc, kind), doc)
    if media == APPLY:
        if not isinstance(doc, dict):
            raise BadRequest("an apply patch must be an object")
        manager = call.query("fieldManager")
        if not manager:
            raise BadRequest("fieldManager: required for apply patches")
        fields.manager(call)  # its length checked
        force = queryparams.flag(call.request.query, "force")
        return lambda old: server_side_apply.apply(old, doc, manager, force, kind)
    raise UnsupportedMediaType(
        f"the patch's media type {media!r} is not supported: use one of {', '.join(PATCH_TYPES)}"
    )


def _json_type(doc: Any) -> str:
    """The JSON type as Go's decoder names it in an unmarshal error."""
    if isinstance(doc, bool):
        return "bool"
    if isinstance(doc, int | float):
        return "number"
    if isinstance(doc, str):
        return "string"
    return "object" if isinstance(doc, dict) else "null"


def _json_patch(old: Object | None, ops: list[Any]) -> Any:
    """The operations applied; one that does not apply (a missing path, a
    failed test) is Kubernetes' generic 422, which names neither the object
    nor the operation (NewGenericServerResponse for StatusUnprocessableEntity)."""
    try:
        return json_patch.apply(old, ops)
    except Invalid as refused:
        if "Unable to complete the copy" in str(refused):
            raise  # the copy bound keeps its words (tests/integration/rest/test_bombs.py)
        err = Invalid(
            "the server rejected our request due to an error in our request",
            details={"kind": "", "name": "", "group": ""},
        )
        err.causes = []  # type: ignore[attr-defined]
        raise err from None


def _restored(new: Object, doc: Object) -> Object:
    """A strategic-merge-patched object its kind's types can read back, or
    Kubernetes' error quoting the patch (`patch: Invalid value: "map[...]":
    cannot restore map from string`), an Invalid of no kind and no name."""
    found = restore.mismatch(new)
    if found is None:
        return new
    raise _patch_invalid(restore.go_value(doc), found.converter_error())


def _decoded(new: Object) -> Object:
    """A JSON-merge-patched object its kind's types can decode, or Kubernetes'
    error quoting the patched object (`json: cannot unmarshal string into Go
    struct field ObjectMeta.metadata.labels of type map[string]string`)."""
    found = restore.mismatch(new)
    if found is None:
        return new
    patched = json.dumps(new, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    raise _patch_invalid(patched, found.decoder_error())


def _patch_invalid(value: str, problem: str) -> Invalid:
    cause = f"patch: Invalid value: {json.dumps(value, ensure_ascii=False)}: {problem}"
    err = Invalid(f' "" is invalid: {cause}', details={"kind": "", "name": "", "group": ""})
    err.causes = [cause]  # type: ignore[attr-defined]
    return err


async def patch(call: Call) -> web.StreamResponse:
    t = call.target
    media = body.media_type(call.request)
    if media not in PATCH_TYPES:
        builder(call, media, None)  # raises the 415
    doc = await intake.document(call, intake.write_verb(call, "patch"), media)
    negotiate(call)
    build = builder(call, media, doc)
    write = fields.Write(call)
    if media == APPLY:
        # Unknown fields are reported, then dropped before the applier owns them.
        write.check(doc)
        pruning.prune(doc)
    dry_run = call.dry_run()
    conversion = t.conversion

    def checked(old: Object | None) -> Object:
        # The patch applies to the object as the client's group/version has it.
        if conversion is not None and old is not None:
            old = conversion.from_stored(old)
        new = build(old)
        if not isinstance(new, dict):
            raise Invalid("the patched object must be a JSON object")
        body.check_depth(new)  # the result is bounded as a request body is (422)
        new = new if conversion is None else conversion.to_stored(new)
        if media != APPLY:
            write.check(new)
        return new

    manager = write.field_manager(applied=media == APPLY)
    try:
        stored = await call.server.run(
            call.registry.patch_with, t.info.key, t.name, checked, call.namespace,
            t.subresource, call.who, dry_run, manager,
        )  # fmt: skip
    except NotFound:
        if media != APPLY or t.subresource:
            raise
        created = await call.server.run(checked, None)
        created.setdefault("metadata", {}).setdefault("name", t.name)
        stored = await call.server.run(
            call.registry.create, t.info.key, created, call.namespace, call.who, False, dry_run,
            manager,
        )  # fmt: skip
        return write.headers(await converted_response(call, stored, 201))
    return write.headers(await converted_response(call, stored))
