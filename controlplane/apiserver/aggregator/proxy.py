"""Forwarding a delegated group/version to its extension API server.

`/apis/<group>/<version>[/...]` of an APIService with a service, after the
caller is authenticated and authorized (RBAC on the request's attributes,
as kube-apiserver's filters run before its proxy): the request goes to
one of the Service's endpoints over TLS with the front proxy's client
certificate, the caller's identity in X-Remote-User, X-Remote-Group and
X-Remote-Extra-<key> (keys URL-escaped), and without the caller's
credential. The answer streams back as it comes (a watch for as long as
it lasts; any other request at most REQUEST_TIMEOUT, as kube-apiserver's
--request-timeout). An
APIService that is not Available answers 503, as kube-aggregator does,
and only its own group/version is affected.
"""

from __future__ import annotations

import asyncio
import random
import weakref
from urllib.parse import quote

import aiohttp
from aiohttp import web

from controlplane.api import limits
from controlplane.api.rbac import Attributes
from controlplane.apiserver.aggregator.availability import Delegate
from controlplane.apiserver.aggregator.frontproxy import EXTRA_PREFIX, GROUP_HEADER, USER_HEADER
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.authz import Authorizer, describe
from controlplane.client import errors

# Not forwarded: hop-by-hop headers, the caller's credentials, identity
# headers a caller might try to set itself.
_DROPPED = frozenset({
    "authorization", "connection", "keep-alive", "proxy-authorization", "te", "trailer",
    "transfer-encoding", "upgrade", "host", "content-length",
})  # fmt: skip
_DROPPED_PREFIXES = ("impersonate-", "x-remote-")
_RETURNED_DROP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length"})
CONNECT_TIMEOUT = 5.0
REQUEST_TIMEOUT = 60.0  # kube-apiserver's --request-timeout; watches are not bounded

_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aiohttp.ClientSession] = (
    weakref.WeakKeyDictionary()
)


def _session() -> aiohttp.ClientSession:
    loop = asyncio.get_running_loop()
    session = _sessions.get(loop)
    if session is None or session.closed:
        session = aiohttp.ClientSession(
            auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT),
        )
        _sessions[loop] = session
    return session


def delegate_of(table: dict[str, Delegate], segments: list[str]) -> tuple[str, Delegate] | None:
    """The delegated group/version a path (split on "/") is under, if any."""
    if len(segments) >= 3 and segments[0] == "apis":
        gv = f"{segments[1]}/{segments[2]}"
        found = table.get(gv)
        if found is not None:
            return gv, found
    return None


def attributes(
    method: str, query: dict[str, str], group: str, rest: list[str]
) -> Attributes | None:
    """The RBAC attributes of a request under /apis/<group>/<version>/; None
    for the group/version's discovery document itself."""
    if not rest:
        return None
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if rest[0] == "namespaces" and len(rest) == 2:  # namespaces/<name> of the group
        name = rest[1]
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
        method, "get"
    )
    if verb == "get" and not name:
        verb = "watch" if query.get("watch") in ("1", "true") else "list"
    elif verb == "delete" and not name:
        verb = "deletecollection"
    return Attributes(verb, group, resource, sub, namespace, name)


def authorize(authorizer: Authorizer, who: Identity, method: str, query: dict[str, str],
              segments: list[str]) -> None:  # fmt: skip
    a = attributes(method, query, segments[1], segments[3:]) if segments[0] == "apis" else None
    if a is None:
        authorizer.authorize_path(who, "get", "/" + "/".join(segments))
        return
    if not authorizer.allows(who, a):
        raise errors.Forbidden(describe(who, a))


def identity_headers(who: Identity) -> list[tuple[str, str]]:
    headers = [(USER_HEADER, who.user)]
    headers += [(GROUP_HEADER, g) for g in who.groups]
    for key, values in who.extra:
        headers += [(EXTRA_PREFIX + quote(key, safe=""), v) for v in values]
    return headers


async def forward(request: web.Request, who: Identity, delegate: Delegate) -> web.StreamResponse:
    if not delegate.available or not delegate.urls or delegate.context is None:
        raise errors.Unavailable("the server is currently unable to handle the request")
    body = await request.content.read(limits.MAX_BODY + 1)
    if len(body) > limits.MAX_BODY:
        raise errors.RequestEntityTooLarge("the request body is too large")
    headers = [
        (k, v) for k, v in request.headers.items()
        if k.lower() not in _DROPPED and not k.lower().startswith(_DROPPED_PREFIXES)
    ]  # fmt: skip
    headers += identity_headers(who)
    url = random.choice(delegate.urls) + request.path_qs
    watching = request.query.get("watch", "").lower() in ("1", "true")
    timeout = aiohttp.ClientTimeout(
        total=None if watching else REQUEST_TIMEOUT, sock_connect=CONNECT_TIMEOUT
    )
    try:
        upstream = await _session().request(
            request.method, url, headers=headers, data=body or None, ssl=delegate.context,
            server_hostname=delegate.server_name, allow_redirects=False, timeout=timeout,
        )  # fmt: skip
    except (TimeoutError, aiohttp.ClientError, OSError) as err:
        raise errors.Unavailable(f"error trying to reach service: {err}") from err
    try:
        response = web.StreamResponse(status=upstream.status)
        for key, value in upstream.headers.items():
            if key.lower() not in _RETURNED_DROP:
                response.headers.add(key, value)
        await response.prepare(request)
        async for chunk in upstream.content.iter_any():
            await response.write(chunk)
        await response.write_eof()
        return response
    finally:
        upstream.release()


async def close() -> None:
    """Close this event loop's connections to extension servers (at stop)."""
    session = _sessions.pop(asyncio.get_running_loop(), None)
    if session is not None:
        await session.close()
