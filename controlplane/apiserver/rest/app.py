"""The aiohttp application: one route, one wrapper, dispatch by path and verb.

The wrapper authenticates (authn.authenticate, as the gRPC side does), holds
a seat of the request's API priority and fairness level (flowcontrol.py, as
the gRPC API: 429 with Retry-After when refused, a queued request waiting on
a thread; the X-Kubernetes-PF-FlowSchema-UID and -PriorityLevel-UID headers
on the answer; a watch counts against the watch caps instead, other
long-running streams are not counted, as kube-apiserver counts them apart),
writes one event to the API server's AuditLog per resource request, logs
each request once and turns every API error into a metav1.Status. Handlers
raise; nothing else writes an error response.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from controlplane.api import crd, jsoncodec, kinds, limits, openapi, openapi_etag, openapi_pb
from controlplane.api.kinds import KindInfo
from controlplane.apiserver import admission_context
from controlplane.apiserver import metrics as apimetrics
from controlplane.apiserver.aggregator import proxy
from controlplane.apiserver.aggregator.availability import Delegate
from controlplane.apiserver.apf_match import Digest
from controlplane.apiserver.auth import Identity, TokenAuthority
from controlplane.apiserver.authn import bearer_token, identify
from controlplane.apiserver.flowcontrol import (
    FlowControl,
    Pending,
    Refused,
    digest,
    resource_digest,
)
from controlplane.apiserver.rest import (
    auditing,
    componentstatus,
    compression,
    delegated,
    discovery,
    fields,
    health,
    impersonation,
    lists,
    metrics_api,
    nodeproxy,
    objects,
    openapi_http,
    patch,
    queryparams,
    respond,
    reviews,
    streams,
    subresources,
    version,
    watch,
)
from controlplane.apiserver.rest.context import Call, Server
from controlplane.apiserver.rest.paths import Target, resolve
from controlplane.apiserver.rest.status import (
    InternalError,
    MethodNotAllowed,
    error_response,
)
from controlplane.client import errors
from machinery import metrics as metricstext

log = logging.getLogger(__name__)

METRICS_GROUP = "metrics.k8s.io"
PUBLIC = frozenset({"/version", "/healthz", "/livez", "/readyz"})
SERVER = web.AppKey("server", Server)
AUTHORITY = web.AppKey("authority", object)
FEED = web.AppKey("feed", watch.LoopFeed)
# The request's APF FlowSchema and priority level UIDs, as response headers.
PF_HEADERS = web.RequestKey("pf_headers", dict)

Handler = Callable[[Call], Awaitable[web.StreamResponse]]


def _json(doc: object) -> web.Response:
    return web.Response(body=jsoncodec.dumps(doc), content_type="application/json")


def _not_found(path: str) -> errors.NotFound:
    return errors.NotFound(f"the server could not find the requested resource ({path})")


def _delegated(request: web.Request) -> dict[str, Delegate]:
    """The group/versions extension API servers serve (aggregator/)."""
    aggregator = request.app[SERVER].aggregator
    return {} if aggregator is None else aggregator.table


def _discovery(request: web.Request, segments: list[str]) -> web.StreamResponse:
    path = request.path.rstrip("/") or "/"
    if path == "/version":
        return _json(version.version())
    if path in ("/api", "/apis"):
        accept, etag = request.headers.get("Accept", ""), request.headers.get("If-None-Match")
        return _root(path, accept, etag, _delegated(request))
    if segments[:1] == ["openapi"]:
        return _openapi(segments[1:], path, request, _delegated(request))
    if segments[:1] == ["api"] and len(segments) == 2:
        found = discovery.resource_list(segments[1])
    elif segments[:1] == ["apis"] and len(segments) == 2:
        found = delegated.group(segments[1], discovery.group(segments[1]), _delegated(request))
    elif segments[:1] == ["apis"] and len(segments) == 3:
        found = discovery.resource_list(f"{segments[1]}/{segments[2]}")
    else:
        found = None
    if found is None:
        raise _not_found(path)
    return _json(found)


def _root(
    path: str, accept: str, if_none_match: str | None, table: dict[str, Delegate]
) -> web.StreamResponse:
    """/api or /apis: aggregated discovery when the client asks for it first
    (kubectl does), else the legacy version or group list. The answer differs
    by Accept, so caches are told so; an unchanged document is a 304 to a
    client that sends the ETag it has (kubectl's HTTP cache does)."""
    version = discovery.aggregated_version(accept)
    if version is None:
        doc = (
            discovery.core_versions()
            if path == "/api"
            else delegated.group_list(discovery.group_list(), table)
        )
        response = _json(doc)
        response.headers["Vary"] = "Accept"
        return response
    found = discovery.aggregated(path == "/api", version)
    body = jsoncodec.dumps(found if path == "/api" else delegated.aggregated(found, table))
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    if if_none_match == etag:
        response = web.Response(status=304)
    else:
        response = web.Response(body=body)
        response.headers["Content-Type"] = discovery.aggregated_content_type(version)
    response.headers["ETag"] = etag
    response.headers["Vary"] = "Accept"
    return response


def _openapi(
    segments: list[str], path: str, request: web.Request, table: dict[str, Delegate]
) -> web.StreamResponse:
    """/openapi/v2 (as protobuf when the client asks, as kubectl does),
    /openapi/v3 and /openapi/v3/<api/v1 | apis/g/v>."""
    if segments == ["v2"]:
        ours = openapi.v2()
        merged = delegated.openapi_v2(ours, table)  # extension servers' documents merged in
        if openapi.PROTOBUF_ACCEPT in request.headers.get("Accept", ""):
            body = openapi.v2_protobuf() if merged is ours else _v2_protobuf(merged)
            response = web.Response(body=body)
            response.headers["Content-Type"] = openapi.PROTOBUF_CONTENT_TYPE
            return response
        if merged is ours:
            return web.Response(body=openapi.v2_json(), content_type="application/json")
        return _json(merged)
    if segments == ["v3"]:
        body = jsoncodec.dumps(delegated.openapi_index(openapi.v3_paths(), table))
        return openapi_http.document(request, body, openapi_etag.etag_of(body))
    if segments[:1] == ["v3"] and segments[1:2] == ["api"] and len(segments) == 3:
        return openapi_http.group_version(request, openapi.v3_served("", segments[2]))
    if segments[:1] == ["v3"] and segments[1:2] == ["apis"] and len(segments) == 4:
        return openapi_http.group_version(request, openapi.v3_served(segments[2], segments[3]))
    raise _not_found(path)


_v2_encoded: dict[int, tuple[dict[str, Any], bytes]] = {}


def _v2_protobuf(doc: dict[str, Any]) -> bytes:
    """A merged /openapi/v2 as protobuf, encoded once per document."""
    hit = _v2_encoded.get(id(doc))
    if hit is not None and hit[0] is doc:
        return hit[1]
    data = openapi_pb.encode_v2(doc)
    _v2_encoded.clear()  # one document at a time
    _v2_encoded[id(doc)] = (doc, data)
    return data


def _handler(target: Target, method: str, request: web.Request) -> tuple[Handler, bool]:
    """The handler of a resource request, and whether it is long-running."""
    sub = target.subresource
    if target.info.kind == "Binding" and target.info.api_version == "v1":
        # POST namespaces/NS/bindings: pods/binding with the pod named in metadata.name.
        if sub or target.name or method != "POST":
            raise MethodNotAllowed(f"{target.info.resource} support create only")
        return subresources.binding, False
    if target.info.read_only:  # computed on each read (ComponentStatus)
        if sub or method != "GET" or queryparams.flag(request.query, "watch"):
            raise MethodNotAllowed(f"{method} is not allowed on {target.info.resource}")
        if target.info.group == METRICS_GROUP:  # the built-in metrics API
            return metrics_api.serve, False
        return componentstatus.serve, False
    if target.info.create_only:
        # Answered at once, never stored: only a create of the collection.
        if sub or target.name or method != "POST":
            raise MethodNotAllowed(f"{target.info.resource} support create only")
        return objects.create, False
    if sub == "":
        if not target.name:
            if method == "GET":
                if queryparams.flag(request.query, "watch"):
                    return _watch, True
                return lists.list_, False
            if method == "POST":
                return objects.create, False
            if method == "DELETE":
                return objects.delete_collection, False
        else:
            table = {"GET": objects.get, "PUT": objects.update, "PATCH": patch.patch,
                     "DELETE": objects.delete}  # fmt: skip
            if method in table:
                return table[method], False
    elif (
        (sub == "status" and target.info.has_status)
        or (sub in ("ephemeralcontainers", "resize") and target.info.key == "Pod")  # kubectl debug
        or sub in kinds.definition(target.info.key).status_subresources  # a CSR's approval
    ):
        table = {"GET": objects.get, "PUT": objects.update, "PATCH": patch.patch}
        if method in table:
            return table[method], False
    elif sub == "scale" and target.info.has_scale:
        return subresources.scale, False
    elif sub == "binding" and target.info.key == "Pod" and method == "POST":
        return subresources.binding, False
    elif sub == "eviction" and target.info.key == "Pod" and method == "POST":
        return subresources.eviction, False
    elif sub == "token" and target.info.key == "ServiceAccount" and method == "POST":
        return subresources.token_request, False
    elif sub == "log" and target.info.key == "Pod" and method == "GET":
        return _log, True
    elif sub in STREAMS and target.info.key == "Pod" and method in ("GET", "POST"):
        return _upgrade, True
    elif sub == "stats" and target.info.kind == "Node" and method == "GET":
        return _stats, False
    elif sub == "proxy" and target.info.kind == "Node" and target.info.group == "":
        return nodeproxy.proxy, False
    else:
        raise errors.NotFound(
            f"the server could not find the requested resource: {target.info.plural}/{sub}"
        )
    raise MethodNotAllowed(f"{method} is not allowed on this resource")


STREAMS = frozenset({"exec", "attach", "portforward"})


async def _log(call: Call) -> web.StreamResponse:
    return await streams.log(call, call.server.agent_credential())


async def _upgrade(call: Call) -> web.StreamResponse:
    return await streams.upgrade(call, call.server.agent_credential())


async def _stats(call: Call) -> web.StreamResponse:
    return await streams.stats(call, call.server.agent_credential())


async def _watch(call: Call) -> web.StreamResponse:
    """A watch counts against the same caps as a gRPC Watch while it is open."""
    end = call.server.flow.watch(call.who)
    metrics = call.server.metrics
    t = call.target
    gone = (
        metrics.watch(apimetrics.labels("WATCH", t.info, t.group_version.rpartition("/")[2], "",
                                        apimetrics.scope(t.info, t.namespace, "")))
        if metrics is not None else None
    )  # fmt: skip
    try:
        return await watch.watch(call, call.request.app[FEED])
    finally:
        end()
        if gone is not None:
            gone()


async def _metrics(request: web.Request, who: Identity) -> web.StreamResponse:
    """GET /metrics: the API server's own series, to callers allowed the URL."""
    server = request.app[SERVER]
    if server.metrics is None or request.method != "GET":
        raise _not_found(request.path)
    await server.run(server.registry.authorizer.authorize_path, who, "get", "/metrics")
    body = await server.run(metricstext.render, server.metrics.registry)
    response = web.Response(body=body)
    response.headers["Content-Type"] = metricstext.CONTENT_TYPE
    return response


def _count(request: web.Request, seen: _Seen, code: int, seconds: float) -> None:
    metrics = request.app[SERVER].metrics
    if metrics is None:
        return
    t = seen.target
    if t is None:  # a method is a client's token: only the known ones become labels
        method = request.method if request.method in apimetrics.METHODS else "other"
        key = apimetrics.labels(method, None, "", "", "")
    else:
        watching = queryparams.is_watch(request.query) if not t.name else False
        verb = apimetrics.rest_verb(request.method, bool(t.name), watching, t.subresource)
        where = apimetrics.scope(t.info, t.namespace, t.name)
        version = t.group_version.rpartition("/")[2]
        key = apimetrics.labels(verb, t.info, version, t.subresource, where)
    metrics.request(key, code, seconds)


def _proxied_target(request: web.Request, segments: list[str], gv: str) -> Target | None:
    """What a proxied resource request names, for its audit event."""
    if segments[0] != "apis":
        return None
    a = proxy.attributes(request.method, dict(request.query), segments[1], segments[3:])
    if a is None:
        return None
    info = KindInfo("", gv, a.resource, a.resource, namespaced=bool(a.namespace))
    return Target(info, gv, a.namespace, a.name, a.subresource)


class _Seen:
    """What the audit event of a request needs from its handling."""

    who: Identity | None = None  # the caller, as authenticated
    impersonated: Identity | None = None  # whom it acts as (Impersonate-User)
    target: Target | None = None


async def _serve(request: web.Request, seen: _Seen) -> web.StreamResponse:
    segments = [s for s in request.path.split("/") if s]
    if segments[:1] and segments[0] in health.ENDPOINTS:  # public, as the checks' names are
        found = await health.answer(request, request.app[SERVER], segments)
        if found is not None:
            return found
    if request.path in PUBLIC:
        return _discovery(request, segments)
    authority = request.app[AUTHORITY]
    assert authority is None or isinstance(authority, TokenAuthority)
    try:
        # A client certificate of the cluster CA first, as kube-apiserver's
        # authenticators are ordered; else the bearer token.
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        who = identify(authority, peer, bearer_token(request.headers.get("Authorization", "")))
    except errors.Unauthenticated as err:  # kube-apiserver says no more than this
        log.debug("http %s %s: %s", request.method, request.path, err)
        raise errors.Unauthenticated("Unauthorized") from None
    seen.who = who
    if request.path == "/metrics":
        return await _metrics(request, who)
    whoami = request.method == "POST" and request.path == reviews.WHOAMI_PATH
    delegate = proxy.delegate_of(_delegated(request), segments)
    if segments[:2] == ["openapi", "v3"] and len(segments) == 5:  # an extension server's document
        delegate = proxy.delegate_of(_delegated(request), segments[2:])
    target = None if whoami or delegate else resolve(segments)
    seen.target = target  # audited from here on, a refused impersonation too
    if impersonation.requested(request.headers):
        server = request.app[SERVER]
        acting = await server.run(
            impersonation.impersonate, server.registry.authorizer, who, request.headers
        )
        seen.who, seen.impersonated, who = who, acting, acting
    if whoami:
        return reviews.whoami(who)
    if delegate is not None:  # an extension API server's group/version
        seen.target = _proxied_target(request, segments, delegate[0])  # audited as any request
        server = request.app[SERVER]
        await server.run(proxy.authorize, server.registry.authorizer, who, request.method,
                         dict(request.query), segments)  # fmt: skip
        if queryparams.flag(request.query, "watch"):  # long-running: no lane slot
            return await proxy.forward(request, who, delegate[1])
        # API priority and fairness, as for local requests.
        a = proxy.attributes(request.method, dict(request.query), segments[1], segments[3:])
        d = resource_digest(who, a.verb if a else "get", segments[1], a.resource if a else "",
                            a.namespace if a else "")  # fmt: skip
        upstream = delegate[1]
        return await _in_seat(
            request, server.flow, d, lambda: proxy.forward(request, who, upstream)
        )
    if target is None:
        return _discovery(request, segments)
    handler, long_running = _handler(target, request.method, request)
    call = Call(request.app[SERVER], request, target, who)
    if long_running:  # watches are capped apart; streams are not counted, as in kube
        return await handler(call)
    # API priority and fairness, as for the gRPC API (flowcontrol.py), by the
    # Kubernetes verb; watches are long-running, counted apart (above).
    verb = auditing.verb(request.method, target, watching=False)
    d = digest(who, verb, target.info.key, target.namespace, target.subresource)
    response = await _in_seat(request, call.server.flow, d, lambda: handler(call))
    warning = crd.deprecation_warning(target.info.key, target.group_version.rpartition("/")[2])
    if warning and not response.prepared:  # a deprecated version of a custom kind
        response.headers.add("Warning", f'299 - "{warning.replace(chr(34), chr(39))}"')
    return response


async def _in_seat(
    request: web.Request,
    flow: FlowControl,
    d: Digest,
    serve: Callable[[], Awaitable[web.StreamResponse]],
) -> web.StreamResponse:
    """`serve()` in a seat of API priority and fairness for `d` (a queued
    request waits on a thread, never on the event loop; Refused past the
    queue), the seat's headers on the answer."""
    try:
        got = flow.admit(d)
        seat = await asyncio.to_thread(got.wait) if isinstance(got, Pending) else got
    except Refused as err:
        request[PF_HEADERS] = err.seat.headers()
        raise
    request[PF_HEADERS] = seat.headers()
    try:
        return await serve()
    finally:
        flow.release(seat)


async def handle(request: web.Request) -> web.StreamResponse:
    start = time.monotonic()
    received = datetime.datetime.now(datetime.UTC)
    seen = _Seen()
    code = 500
    admitted = admission_context.start()  # this request's task: its warnings, annotations
    try:
        response = await _serve(request, seen)
        code = response.status
        if admitted.warnings and not response.prepared:
            fields.add_warnings(response, admitted.warnings)
        await compression.compress(request, response, request.app[SERVER])
        return response
    except errors.ApiError as err:
        log.debug("http %s %s: %s", request.method, request.path_qs, err)
        target = seen.target
        answer = respond.error(request, err)
        if target is not None:
            # An Invalid names the Kind (kubectl: `The Namespace "x" is invalid`), the rest the resource.
            kind = target.info.kind if isinstance(err, errors.Invalid) else target.info.plural
            name = target.name or str(getattr(err, "name", "") or "")
            answer = respond.error(request, err, kind, name, target.group)
        code = answer.status
        return answer
    except Exception as err:  # a bug: answered as kube-apiserver does, 500 InternalError
        log.exception("http %s %s failed", request.method, request.path_qs)
        return error_response(InternalError(f"internal error: {err}"))
    finally:
        elapsed_ms = (time.monotonic() - start) * 1000
        _count(request, seen, code, elapsed_ms / 1000)
        server = request.app[SERVER]
        if server.audit is not None and seen.target is not None:
            await server.run(
                auditing.record, server.audit, request, seen.who, seen.target, code, received,
                elapsed_ms, admitted.annotations, seen.impersonated,
            )  # fmt: skip
        if log.isEnabledFor(logging.DEBUG):
            log.debug("http %s %s ms=%.2f", request.method, request.path_qs, elapsed_ms)


def make_app(
    server: Server, authority: TokenAuthority | None, feed: watch.LoopFeed
) -> web.Application:
    # Bodies are read by body.read, which refuses past limits.MAX_BODY itself.
    app = web.Application(client_max_size=limits.MAX_BODY + 1)
    app[SERVER] = server
    app[AUTHORITY] = authority
    app[FEED] = feed
    app.router.add_route("*", "/{tail:.*}", handle)
    app.on_response_prepare.append(_flow_headers)
    return app


async def _flow_headers(request: web.Request, response: web.StreamResponse) -> None:
    """X-Kubernetes-PF-FlowSchema-UID and -PriorityLevel-UID on every answer
    to a classified request, streamed ones included (set as headers go out)."""
    found = request.get(PF_HEADERS)
    if found:
        response.headers.update(found)
