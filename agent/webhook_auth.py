"""Callers of the agent endpoint other than the API server: the kubelet's webhook authn/authz.

A caller without the API server's client certificate sends a bearer token.
As the kubelet does with `--authentication-token-webhook` and
`--authorization-mode=Webhook`, the agent asks the API server who the token
is (TokenReview) and whether that user may make the request
(SubjectAccessReview), with the kubelet's mapping of a request to
attributes: resource `nodes`, name the node's, subresource from the path
(`/stats/...` stats, `/metrics...` metrics, `/logs/...` log, anything else
proxy) and verb from the HTTP method (GET and HEAD get, POST create, PUT
update, PATCH patch, DELETE delete).

Answers are cached, bounded (least recently used dropped first) and keyed
by a hash of the token, never the token itself: a token the API server
accepted for `authenticated_ttl` (the kubelet's 2 minutes), one it refused
for `unauthenticated_ttl`; an allowed request for `authorized_ttl` (5
minutes), a denied one for `unauthorized_ttl` (30 s). Reviews the cache
cannot answer are bounded so that a flood of random tokens cannot flood
the API server: at most `max_in_flight` at once and at most `burst` plus
`reviews_per_second` per second over time; past that the caller gets 429
before any review is sent. Refusals have the kubelet's shape: 401
`Unauthorized`, 403 `Forbidden (user=U, verb=V, resource=nodes,
subresource=S)`.

This module decides; it never reads a socket (agent/stream_proxy.py calls
`check`) and reaches the API server only through a `Reviewer`.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from agent.request_target import RequestTarget
from controlplane.client.errors import ApiError
from machinery.ttlcache import OverBudget, ReviewBudget, TTLCache

log = logging.getLogger("skiff.agent.webhook_auth")

METHOD_VERBS = {
    "GET": "get",
    "HEAD": "get",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


@dataclass(frozen=True)
class Caller:
    """Who a token is, as the API server's TokenReview said."""

    user: str
    groups: tuple[str, ...] = ()
    uid: str = ""


@dataclass(frozen=True)
class Decision:
    """What to answer: `code` 200 lets the request through (as `caller`)."""

    code: int
    message: str = ""
    caller: Caller | None = None


class Reviewer(Protocol):
    """The API server's TokenReview and SubjectAccessReview."""

    def token_review(self, token: str) -> Caller | None: ...

    def access_review(self, caller: Caller, verb: str, subresource: str, node: str) -> bool: ...


class ReviewUnavailable(Exception):
    """The API server could not answer a review (not cached; the caller gets 503)."""


def request_attributes(method: str, target: RequestTarget) -> tuple[str, str]:
    """The kubelet's (verb, subresource) of a request on resource `nodes`, read
    from the parsed target the router serves (request_target.py), never the raw path."""
    verb = METHOD_VERBS.get(method.upper(), method.lower())
    first = target.segments[0] if target.segments else ""
    if first == "stats":
        return verb, "stats"
    if first.startswith("metrics"):
        return verb, "metrics"
    if first == "logs":
        return verb, "log"
    return verb, "proxy"


@dataclass(frozen=True)
class WebhookSettings:
    authenticated_ttl: float = 120.0
    unauthenticated_ttl: float = 30.0
    authorized_ttl: float = 300.0
    unauthorized_ttl: float = 30.0
    max_entries: int = 4096  # per cache
    max_in_flight: int = 4  # reviews waiting on the API server at once
    reviews_per_second: float = 10.0  # reviews sent, sustained ...
    burst: int = 20  # ... and at once after a quiet spell


def _key(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class WebhookAuth:
    """See the module docstring."""

    def __init__(
        self,
        reviewer: Reviewer,
        node: str,
        settings: WebhookSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reviewer = reviewer
        self.node = node
        self.settings = s = settings or WebhookSettings()
        self._tokens: TTLCache[Caller | None] = TTLCache(s.max_entries, clock)
        self._access: TTLCache[bool] = TTLCache(s.max_entries, clock)
        self._budget = ReviewBudget(s.max_in_flight, s.reviews_per_second, s.burst, clock)

    def check(self, authorization: str, method: str, target: RequestTarget) -> Decision:
        """The answer to a request for `target` with this Authorization header."""
        token = authorization[7:].strip() if authorization[:7].lower() == "bearer " else ""
        if not token:
            return Decision(401, "Unauthorized")
        try:
            caller = self._authenticate(token)
        except ReviewUnavailable as err:
            return Decision(503, f"cannot authenticate the request: {err}")
        except OverBudget:
            return Decision(429, "too many token reviews in progress; retry later")
        if caller is None:
            return Decision(401, "Unauthorized")
        verb, subresource = request_attributes(method, target)
        try:
            allowed = self._authorize(caller, verb, subresource)
        except ReviewUnavailable as err:
            return Decision(503, f"cannot authorize the request: {err}")
        except OverBudget:
            return Decision(429, "too many access reviews in progress; retry later")
        if not allowed:
            return Decision(
                403,
                f"Forbidden (user={caller.user}, verb={verb}, resource=nodes, "
                f"subresource={subresource})",
            )
        return Decision(200, caller=caller)

    def _authenticate(self, token: str) -> Caller | None:
        key = _key(token)
        hit, caller = self._tokens.get(key)
        if hit:
            return caller
        caller = self._budget.spend(lambda: self.reviewer.token_review(token))
        s = self.settings
        self._tokens.put(key, caller, s.authenticated_ttl if caller else s.unauthenticated_ttl)
        return caller

    def _authorize(self, caller: Caller, verb: str, subresource: str) -> bool:
        key = (caller, verb, subresource)
        hit, allowed = self._access.get(key)
        if hit:
            return bool(allowed)
        allowed = self._budget.spend(
            lambda: self.reviewer.access_review(caller, verb, subresource, self.node)
        )
        s = self.settings
        self._access.put(key, allowed, s.authorized_ttl if allowed else s.unauthorized_ttl)
        return allowed


class ApiReviewer:
    """`Reviewer` through the agent's API client (its node credential may
    create TokenReviews and SubjectAccessReviews)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def _create(self, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
        body = {"apiVersion": _API_VERSIONS[kind], "kind": kind, "spec": spec}
        try:
            answer: dict[str, Any] = self.client.create(kind, body)
        except ApiError as err:
            raise ReviewUnavailable(f"{kind}: {err}") from err
        return answer.get("status") or {}

    def token_review(self, token: str) -> Caller | None:
        status = self._create("TokenReview", {"token": token})
        if not status.get("authenticated"):
            return None
        user = status.get("user") or {}
        return Caller(str(user.get("username") or ""),
                      tuple(str(g) for g in user.get("groups") or []),
                      str(user.get("uid") or ""))  # fmt: skip

    def access_review(self, caller: Caller, verb: str, subresource: str, node: str) -> bool:
        status = self._create(
            "SubjectAccessReview",
            {
                "user": caller.user,
                "groups": list(caller.groups),
                "uid": caller.uid,
                "resourceAttributes": {
                    "verb": verb,
                    "resource": "nodes",
                    "subresource": subresource,
                    "name": node,
                },
            },
        )
        return bool(status.get("allowed"))


_API_VERSIONS = {
    "TokenReview": "authentication.k8s.io/v1",
    "SubjectAccessReview": "authorization.k8s.io/v1",
}
