"""One audit event per REST resource request, in the API server's AuditLog
(the same log, policy and event shape as the gRPC API's).

The Kubernetes verb comes from the HTTP method and the URL (a GET of a
collection is list, or watch with watch=true; a DELETE of one is
deletecollection); the event is written when the answer is complete.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping

from aiohttp import web

from controlplane.apiserver.audit import AuditLog
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.rest import queryparams
from controlplane.apiserver.rest.paths import Target

# The request body, kept by body.read for the audit log's requestObject.
BODY = web.RequestKey("body", bytes)
ANONYMOUS = Identity("system:anonymous", groups=("system:unauthenticated",))


def verb(method: str, target: Target, watching: bool) -> str:
    """The Kubernetes verb of a resource request (the audit log's, and the
    one API priority and fairness matches rules by)."""
    collection = not target.name
    if method in ("GET", "HEAD"):
        if collection:
            return "watch" if watching else "list"
        return "get"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "deletecollection" if collection else "delete"
    return method.lower()


def record(
    audit: AuditLog,
    request: web.Request,
    who: Identity | None,
    target: Target,
    code: int,
    received: datetime.datetime,
    latency_ms: float,
    annotations: Mapping[str, str] | None = None,
    impersonated: Identity | None = None,
) -> None:
    """Blocking (a file write): call on the executor. `who` is the caller;
    `impersonated` whom it acted as (both are recorded); `annotations`: what
    admission added to the event (PodSecurity's)."""
    watching = queryparams.is_watch(request.query)
    audit.record(
        who or ANONYMOUS,
        verb(request.method, target, watching),
        {
            "resource": target.info.plural,
            "apiGroup": target.group,
            "apiVersion": target.group_version.rpartition("/")[2],
            "namespace": target.namespace,
            "name": target.name,
            "subresource": target.subresource,
        },
        code,
        received,
        latency_ms,
        request.get(BODY),
        annotations,
        impersonated=impersonated,
    )
