"""Bearer tokens: who sends a request.

Tokens are derived from one secret kept in the data directory (HMAC-SHA256):
the admin token, node tokens (`skiff-node.<base64 node name>.<credential
id>.<mac>`), which an agent obtains with Auth.Join and a bootstrap token
(apiserver/bootstrap.py) and which hold only while their id is the one on
record for the node (`node_credentials`, nodecredentials.py), and user tokens
(`skiff-user.<base64 JSON of name and groups>.<mac>`, written by `skiff user
create`; like a client certificate, the token itself carries the groups).
Every authenticated identity is in the group system:authenticated; a user
in system:masters is an admin. ServiceAccount tokens (JWTs) are checked by
satokens.py, bootstrap tokens (`<id>.<secret>`, the join tokens) against
their Secrets by bootstrap.py on every use (system:bootstrap:<id>, group
system:bootstrappers, as Kubernetes' bootstrap authenticator). Several control-plane hosts sharing an etcd must share the
secret (copy `<data-dir>/pki`).

Authentication only: what a request may do is `authz.Authorizer`'s
business. This module never touches storage or gRPC.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controlplane.api.bootstraptoken import TOKEN_RE as BOOTSTRAP_TOKEN

NODES_GROUP = "system:nodes"
MASTERS_GROUP = "system:masters"
AUTHENTICATED = "system:authenticated"


@dataclass(frozen=True)
class Identity:
    """Who sends a request (Kubernetes' user.Info): `admin` holds every
    permission (the system:masters group); `node` names the node of a node
    credential (user system:node:NAME, group system:nodes)."""

    user: str
    admin: bool = False
    node: str | None = None
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()  # user.Info's extra, by key


SYSTEM = Identity("system:apiserver", admin=True, groups=(MASTERS_GROUP, AUTHENTICATED))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


CACHED = 10_000  # valid tokens remembered (one per node, plus admins)


class TokenAuthority:
    """Issues and checks tokens derived from `secret`."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 16:
            raise ValueError("token secret too short")
        self._secret = secret
        # Tokens already checked (a few per client): the HMAC once per token,
        # not once per request. Only valid tokens are kept, at most CACHED.
        self._known: dict[str, Identity] = {}
        # ServiceAccount tokens (JWTs) are checked there (satokens.py).
        self.service_accounts: Any = None
        # (node, credential id) -> whether that node credential still holds.
        self.node_credentials: Callable[[str, str], bool] | None = None
        # A bootstrap token (<id>.<secret>) -> who it is (None: not valid).
        self.bootstrap_tokens: Callable[[str], Identity | None] | None = None
        # (node, the certificate's notBefore in epoch seconds) -> whether a
        # client certificate of that node still holds.
        self.node_certificates: Callable[[str, float], bool] | None = None

    def _mac(self, purpose: str) -> str:
        return hmac.new(self._secret, purpose.encode(), hashlib.sha256).hexdigest()[:40]

    def admin_token(self) -> str:
        return f"skiff-admin.{self._mac('admin')}"

    def node_token(self, node: str, credential: str) -> str:
        """The token of node `node`'s credential `credential` (an id on record)."""
        encoded = _b64(node.encode())
        return f"skiff-node.{encoded}.{credential}.{self._mac(f'node:{node}:{credential}')}"

    def user_token(self, user: str, groups: tuple[str, ...] = ()) -> str:
        payload = _b64(json.dumps({"u": user, "g": list(groups)}, separators=(",", ":")).encode())
        return f"skiff-user.{payload}.{self._mac('user:' + payload)}"

    def authenticate(self, token: str) -> Identity | None:
        if token.startswith("eyJ"):  # a JWT: a ServiceAccount token
            accounts = self.service_accounts
            return accounts.authenticate(token) if accounts is not None else None
        if BOOTSTRAP_TOKEN.match(token):  # checked against its Secret every time
            bootstrap = self.bootstrap_tokens
            return bootstrap(token) if bootstrap is not None else None
        identity = self._known.get(token)
        if identity is None:
            identity = self._check(token)
            if identity is None:
                return None
            if len(self._known) >= CACHED:
                self._known.clear()
            self._known[token] = identity
        # Checked on every request: a node deleted or re-joined since is refused.
        checker = self.node_credentials
        if identity.node is not None and checker is not None:
            return identity if checker(identity.node, identity.uid) else None
        return identity

    def _check(self, token: str) -> Identity | None:
        if token.startswith("skiff-admin."):
            if hmac.compare_digest(token.encode(), self.admin_token().encode()):
                return Identity("admin", admin=True, groups=(MASTERS_GROUP, AUTHENTICATED))
            return None
        if token.startswith("skiff-user."):
            return self._user(token)
        if token.startswith("skiff-node."):
            parts = token.split(".")
            if len(parts) != 4 or not parts[2]:
                return None
            try:
                node = _unb64(parts[1]).decode()
            except (ValueError, UnicodeDecodeError):
                return None
            if hmac.compare_digest(token.encode(), self.node_token(node, parts[2]).encode()):
                return Identity(f"system:node:{node}", node=node,
                                groups=(NODES_GROUP, AUTHENTICATED), uid=parts[2])  # fmt: skip
        return None

    def _user(self, token: str) -> Identity | None:
        parts = token.split(".")
        if len(parts) != 3:
            return None
        if not hmac.compare_digest(parts[2].encode(), self._mac("user:" + parts[1]).encode()):
            return None
        try:
            data = json.loads(_unb64(parts[1]))
            user, groups = str(data["u"]), tuple(str(g) for g in data["g"])
        except (ValueError, KeyError, TypeError):
            return None
        if not user or user.startswith(("system:node:", "system:serviceaccount:")):
            return None  # those names belong to node and ServiceAccount credentials
        groups = (*groups, AUTHENTICATED) if AUTHENTICATED not in groups else groups
        return Identity(user, admin=MASTERS_GROUP in groups, groups=groups)
