"""Delegated authentication and authorization of a component's secure port,
as kube-scheduler and kube-controller-manager check the callers of theirs
(k8s.io/apiserver's DelegatingAuthenticationOptions and
DelegatingAuthorizationOptions).

Who: a client certificate that chains to the client CA is its subject's
common name, its organizations the groups (checked by TLS, read here); else
a bearer token, which the API server names with a TokenReview (a token it
does not know is 401 Unauthorized); else nobody: system:anonymous in
system:unauthenticated (anonymous requests are allowed to reach
authorization, as the delegated authenticator's default).

May it: paths in `always_allow_paths` (--authorization-always-allow-paths,
/healthz, /readyz and /livez by default) are allowed to anyone; any other
request is a SubjectAccessReview for the non-resource URL (verb from the
HTTP method, `get` for GET), 403 `forbidden: User "U" cannot get path
"/metrics"` when denied.

Answers are cached as Kubernetes' delegating authenticator and authorizer
cache them (10 s each by default: --authentication-token-webhook-cache-ttl,
--authorization-webhook-cache-authorized-ttl and -unauthorized-ttl), keyed
by a hash of the token, never the token itself, and bounded. Reviews the
caches cannot answer are bounded as the agent bounds its own (at most 4 at
once, 10 a second after a burst of 20), so that random tokens or paths
cannot flood the API server: past that the caller gets 429.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controlplane.client import errors
from machinery.ttlcache import OverBudget, ReviewBudget, TTLCache

log = logging.getLogger(__name__)

ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
AUTHENTICATED = "system:authenticated"
ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
METHOD_VERBS = {"GET": "get", "HEAD": "head", "POST": "post", "PUT": "put",
                "PATCH": "patch", "DELETE": "delete"}  # fmt: skip


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""


@dataclass(frozen=True)
class Verdict:
    """What to answer: 200 lets the request through."""

    code: int
    message: str = ""
    user: User | None = None


@dataclass(frozen=True)
class DelegationSettings:
    token_ttl: float = 10.0
    authorized_ttl: float = 10.0
    unauthorized_ttl: float = 10.0
    max_entries: int = 4096
    max_in_flight: int = 4  # reviews waiting on the API server at once
    reviews_per_second: float = 10.0  # sent, sustained ...
    burst: int = 20  # ... and at once after a quiet spell
    always_allow_paths: tuple[str, ...] = field(default=ALWAYS_ALLOW_PATHS)


def user_of_certificate(peer: dict[str, Any] | None) -> User | None:
    """The user a verified client certificate names (ssl's getpeercert()):
    CN the name, each O a group; None without a certificate or a CN."""
    if not peer:
        return None
    name, groups = "", []
    for rdn in peer.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                name = str(value)
            elif key == "organizationName":
                groups.append(str(value))
    if not name:
        return None
    return User(name, (*groups, AUTHENTICATED))


def path_allowed(path: str, patterns: tuple[str, ...]) -> bool:
    """--authorization-always-allow-paths: exact paths, or prefixes ending in `*`."""
    for pattern in patterns:
        if pattern.endswith("*") and path.startswith(pattern[:-1]):
            return True
        if path == pattern:
            return True
    return False


class DelegatedAuth:
    """Decides each request to a component's secure port (module docstring)."""

    def __init__(
        self,
        authn_client: Any,
        authz_client: Any,
        settings: DelegationSettings | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        import time

        self.authn = authn_client
        self.authz = authz_client
        self.settings = s = settings or DelegationSettings()
        now = clock or time.monotonic
        self._tokens: TTLCache[User | None] = TTLCache(s.max_entries, now)
        self._access: TTLCache[bool] = TTLCache(s.max_entries, now)
        self._budget = ReviewBudget(s.max_in_flight, s.reviews_per_second, s.burst, now)

    def check(
        self, method: str, path: str, authorization: str, peer: dict[str, Any] | None
    ) -> Verdict:
        """The answer to `method path` from a caller with this Authorization
        header and this verified client certificate (None: none)."""
        user = user_of_certificate(peer)
        if user is None:
            scheme, _, token = authorization.partition(" ")
            token = token.strip()
            if authorization and (scheme.lower() != "bearer" or not token):
                return Verdict(401, "Unauthorized")
            if token:
                try:
                    user = self._token_user(token)
                except OverBudget:
                    return Verdict(429, "too many token reviews in progress; retry later")
                except errors.ApiError as err:
                    log.warning("TokenReview failed: %s", err)
                    return Verdict(401, "Unauthorized")
                if user is None:
                    return Verdict(401, "Unauthorized")
            else:
                user = User(ANONYMOUS, (UNAUTHENTICATED,))
        if path_allowed(path, self.settings.always_allow_paths):
            return Verdict(200, user=user)
        verb = METHOD_VERBS.get(method.upper(), method.lower())
        try:
            allowed = self._allowed(user, verb, path)
        except OverBudget:
            return Verdict(429, "too many access reviews in progress; retry later")
        except errors.ApiError as err:
            return Verdict(403, f'forbidden: User "{user.name}" cannot {verb} path "{path}": '
                           f"authorization failed: {err}")  # fmt: skip
        if not allowed:
            return Verdict(403, f'forbidden: User "{user.name}" cannot {verb} path "{path}"')
        return Verdict(200, user=user)

    def _review(self, send: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """A review's status, within the budget (OverBudget past it)."""
        answer = self._budget.spend(send)
        return answer.get("status") or {}

    def _token_user(self, token: str) -> User | None:
        key = hashlib.sha256(token.encode()).digest()
        hit, user = self._tokens.get(key)
        if hit:
            return user
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                  "spec": {"token": token}}  # fmt: skip
        status = self._review(lambda: self.authn.create("TokenReview", review))
        user = None
        if status.get("authenticated"):
            info = status.get("user") or {}
            user = User(str(info.get("username") or ""),
                        tuple(str(g) for g in info.get("groups") or []),
                        str(info.get("uid") or ""))  # fmt: skip
        self._tokens.put(key, user, self.settings.token_ttl)
        return user

    def _allowed(self, user: User, verb: str, path: str) -> bool:
        key = (user, verb, path)
        hit, allowed = self._access.get(key)
        if hit:
            return bool(allowed)
        review = {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user.name, "groups": list(user.groups), "uid": user.uid,
                     "nonResourceAttributes": {"path": path, "verb": verb}},
        }  # fmt: skip
        status = self._review(lambda: self.authz.create("SubjectAccessReview", review))
        allowed = bool(status.get("allowed"))
        s = self.settings
        self._access.put(key, allowed, s.authorized_ttl if allowed else s.unauthorized_ttl)
        return allowed
