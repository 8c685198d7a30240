"""Questions about the caller, asked with a POST: who am I, may I.

SelfSubjectReview (authentication.k8s.io/v1, `kubectl auth whoami`) answers
with the Identity the token proved. SelfSubjectAccessReview
(authorization.k8s.io/v1, `kubectl auth can-i`) asks the same `authorize`
the registry calls, so its answer is whatever the authorizer in the tree
decides. Neither stores anything.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from controlplane.api import jsoncodec
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.authz import Authorizer
from controlplane.apiserver.rest import body
from controlplane.apiserver.rest.paths import every_kind
from controlplane.client.errors import Forbidden

AUTHENTICATION = "authentication.k8s.io/v1"
AUTHORIZATION = "authorization.k8s.io/v1"
WHOAMI_PATH = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
ACCESS_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"

RESOURCES: dict[str, dict[str, Any]] = {
    AUTHENTICATION: {"name": "selfsubjectreviews", "singularName": "selfsubjectreview",
                     "namespaced": False, "kind": "SelfSubjectReview", "verbs": ["create"]},
    AUTHORIZATION: {"name": "selfsubjectaccessreviews",
                    "singularName": "selfsubjectaccessreview", "namespaced": False,
                    "kind": "SelfSubjectAccessReview", "verbs": ["create"]},
}  # fmt: skip

# Kubernetes' verbs -> the registry's (subresources add `_<sub>`).
_VERBS = {"update": "update", "patch": "patch", "get": "get", "list": "list",
          "watch": "watch", "create": "create", "delete": "delete",
          "deletecollection": "delete"}  # fmt: skip


def _created(doc: dict[str, Any]) -> web.Response:
    return web.Response(status=201, body=jsoncodec.dumps(doc), content_type="application/json")


def whoami(who: Identity) -> web.Response:
    groups = ["system:authenticated"]
    if who.admin:
        groups.insert(0, "system:masters")
    if who.node:
        groups.insert(0, "system:nodes")
    return _created({
        "kind": "SelfSubjectReview", "apiVersion": AUTHENTICATION,
        "metadata": {"creationTimestamp": None},
        "status": {"userInfo": {"username": who.user, "groups": groups}},
    })  # fmt: skip


def allowed(authorizer: Authorizer, who: Identity, attributes: dict[str, Any]) -> tuple[bool, str]:
    """Whether `who` may do what resourceAttributes describe, and why not."""
    group = str(attributes.get("group") or "")
    resource = str(attributes.get("resource") or "")
    info = next(
        (k for k in every_kind() if k.plural == resource and (k.group == group or resource == "*")),
        None,
    )
    if info is None:
        return False, f"no resource {resource!r} in group {group!r}"
    verb = _VERBS.get(str(attributes.get("verb") or ""), str(attributes.get("verb") or ""))
    sub = str(attributes.get("subresource") or "")
    if sub:
        verb = f"{verb}_{sub}"
    try:
        authorizer.authorize(who, verb, info, str(attributes.get("namespace") or ""),
                  str(attributes.get("name") or ""))  # fmt: skip
    except Forbidden as err:
        return False, str(err)
    return True, ""


async def access_review(
    request: web.Request, who: Identity, authorizer: Authorizer
) -> web.Response:
    doc = body.as_object(body.decode(await body.read(request), body.media_type(request)))
    spec = doc.get("spec") or {}
    attributes = spec.get("resourceAttributes") if isinstance(spec, dict) else None
    if isinstance(attributes, dict):
        ok, reason = allowed(authorizer, who, attributes)
    else:
        ok, reason = False, "only resourceAttributes are answered"
    status: dict[str, Any] = {"allowed": ok}
    if reason:
        status["reason"] = reason
    return _created({"kind": "SelfSubjectAccessReview", "apiVersion": AUTHORIZATION,
                     "metadata": {"creationTimestamp": None}, "spec": spec,
                     "status": status})  # fmt: skip
