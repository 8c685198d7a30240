"""AdmissionReview: what a webhook is sent and what its answer may say, as
admission.k8s.io/v1 (and v1beta1, the same shape) has them.

`Request` is one admission request: the operation (CREATE, UPDATE,
DELETE, CONNECT), the resource, name and namespace, who asks, the object
and the stored one, dry run and the verb's options. `review()` builds the
AdmissionReview for one webhook (its own uid, the version the webhook
accepts first among v1 and v1beta1); `parse()` checks the answer as
kube-apiserver's VerifyAdmissionResponse does: the same apiVersion and
kind, the same uid, a patch only from a mutating webhook and only
`JSONPatch` (base64 in the JSON), warnings and auditAnnotations strings.
Anything else is an `InvalidResponse`, which the caller treats as a failed
call (failurePolicy decides).
"""

from __future__ import annotations

import base64
import binascii
import uuid
from dataclasses import dataclass, field
from typing import Any

from controlplane.api import jsoncodec
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.webhooks.matching import Resource

Object = dict[str, Any]
VERSIONS = ("v1", "v1beta1")
OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


class InvalidResponse(Exception):
    """A webhook's answer that is not a usable AdmissionReview."""


@dataclass
class Request:
    operation: str  # CREATE | UPDATE | DELETE | CONNECT
    kind: str  # the object's Kind ("Pod"; "Scale" for a scale write)
    resource: Resource
    name: str
    identity: Identity
    obj: Object | None
    old: Object | None = None
    dry_run: bool = False
    options: Object | None = None  # the verb's options (CreateOptions, ...), without kind


@dataclass
class Response:
    allowed: bool
    status: Object = field(default_factory=dict)  # metav1.Status: code, message, reason
    patch: list[Any] | None = None
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)


def review_version(accepted: Any) -> str:
    for version in accepted or ():
        if version in VERSIONS:
            return str(version)
    return "v1"


def user_info(identity: Identity) -> Object:
    info: Object = {"username": identity.user}
    if identity.uid:
        info["uid"] = identity.uid
    if identity.groups:
        info["groups"] = list(identity.groups)
    if identity.extra:
        info["extra"] = {key: list(values) for key, values in identity.extra}
    return info


def review(req: Request, version: str, group: str, api_version: str) -> tuple[str, Object]:
    """(uid, AdmissionReview) for one call: the resource as the webhook's rule
    matched it (group, version), the request's own as requestKind/Resource."""
    uid = str(uuid.uuid4())
    r = req.resource
    kind = {"group": group, "version": api_version, "kind": req.kind}
    resource = {"group": group, "version": api_version, "resource": r.resource}
    body: Object = {
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "requestKind": {"group": r.group, "version": r.version, "kind": req.kind},
        "requestResource": {"group": r.group, "version": r.version, "resource": r.resource},
        "name": req.name,
        "operation": req.operation,
        "userInfo": user_info(req.identity),
        "object": req.obj,
        "oldObject": req.old,
        "dryRun": req.dry_run,
    }
    if r.subresource:
        body["subResource"] = body["requestSubResource"] = r.subresource
    if r.namespace:
        body["namespace"] = r.namespace
    options_kind = OPTIONS_KIND.get(req.operation)
    if options_kind is not None:
        options = dict(req.options or {})
        if req.dry_run:
            options["dryRun"] = ["All"]
        body["options"] = {"kind": options_kind, "apiVersion": "meta.k8s.io/v1", **options}
    elif req.options is not None:
        body["options"] = req.options
    return uid, {"apiVersion": f"admission.k8s.io/{version}", "kind": "AdmissionReview",
                 "request": body}  # fmt: skip


def parse(data: bytes, uid: str, version: str, mutating: bool) -> Response:
    try:
        doc = jsoncodec.loads(data)
    except ValueError as err:
        raise InvalidResponse(f"the response is not JSON: {err}") from err
    if not isinstance(doc, dict):
        raise InvalidResponse("the response is not a JSON object")
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if api_version != f"admission.k8s.io/{version}" or kind != "AdmissionReview":
        raise InvalidResponse(
            f"expected webhook response of admission.k8s.io/{version}, Kind=AdmissionReview, "
            f"got {api_version}, Kind={kind}"
        )
    response = doc.get("response")
    if not isinstance(response, dict):
        raise InvalidResponse("webhook response was absent")
    if response.get("uid") != uid:
        raise InvalidResponse(f'expected response.uid="{uid}", got "{response.get("uid")}"')
    allowed = response.get("allowed")
    if not isinstance(allowed, bool):
        raise InvalidResponse("response.allowed: must be true or false")
    status = response.get("status")
    if status is not None and not isinstance(status, dict):
        raise InvalidResponse("response.status: must be a Status object")
    out = Response(allowed, dict(status or {}))
    out.patch = _patch(response, mutating)
    warnings = response.get("warnings") or []
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        raise InvalidResponse("response.warnings: must be a list of strings")
    out.warnings = list(warnings)
    notes = response.get("auditAnnotations") or {}
    if not isinstance(notes, dict) or not all(isinstance(v, str) for v in notes.values()):
        raise InvalidResponse("response.auditAnnotations: must be a map of strings")
    out.audit_annotations = {str(k): v for k, v in notes.items()}
    return out


def _patch(response: Object, mutating: bool) -> list[Any] | None:
    patch, patch_type = response.get("patch"), response.get("patchType")
    if not patch:
        if patch_type:
            raise InvalidResponse(f"webhook returned patchType of {patch_type} without a patch")
        return None
    if not mutating:
        raise InvalidResponse("validating webhooks may not return patches")
    if patch_type != "JSONPatch":
        raise InvalidResponse(f'webhook returned invalid patchType: "{patch_type}"'
                              if patch_type else "webhook returned a patch without patchType")  # fmt: skip
    try:
        ops = jsoncodec.loads(base64.b64decode(str(patch), validate=True))
    except (binascii.Error, ValueError) as err:
        raise InvalidResponse(f"the patch is not base64 of a JSON patch: {err}") from err
    if not isinstance(ops, list):
        raise InvalidResponse("the patch is not a JSON patch (a list of operations)")
    return ops
