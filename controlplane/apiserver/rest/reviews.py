"""SelfSubjectReview (authentication.k8s.io/v1, `kubectl auth whoami`):
answered from the Identity the token proved, never stored.

The other create-only kinds (SelfSubjectAccessReview, SubjectAccessReview,
TokenReview, TokenRequest) are kinds of the table and go through the
registry's create like any other (controlplane.apiserver.reviews answers
them); only whoami, which the registry has no kind for, lives here.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from controlplane.api import jsoncodec
from controlplane.apiserver.auth import AUTHENTICATED, MASTERS_GROUP, Identity

AUTHENTICATION = "authentication.k8s.io/v1"
WHOAMI_PATH = "/apis/authentication.k8s.io/v1/selfsubjectreviews"

# Its discovery entry, listed in authentication.k8s.io/v1 beside the kinds there.
RESOURCE: dict[str, Any] = {
    "name": "selfsubjectreviews",
    "singularName": "selfsubjectreview",
    "namespaced": False,
    "kind": "SelfSubjectReview",
    "verbs": ["create"],
}


def whoami(who: Identity) -> web.Response:
    groups = list(who.groups)
    if who.admin and MASTERS_GROUP not in groups:
        groups.insert(0, MASTERS_GROUP)
    if who.node and "system:nodes" not in groups:
        groups.insert(0, "system:nodes")
    if AUTHENTICATED not in groups:
        groups.append(AUTHENTICATED)
    user: dict[str, Any] = {"username": who.user, "groups": groups}
    if who.uid:
        user["uid"] = who.uid
    if who.extra:
        user["extra"] = {key: list(values) for key, values in who.extra}
    doc = {
        "kind": "SelfSubjectReview",
        "apiVersion": AUTHENTICATION,
        "metadata": {"creationTimestamp": None},
        "status": {"userInfo": user},
    }
    return web.Response(status=201, body=jsoncodec.dumps(doc), content_type="application/json")
