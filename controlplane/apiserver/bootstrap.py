"""Joining a node with a bootstrap token (see controlplane/api/bootstraptoken.py).

`BootstrapJoin.join(token, node)` checks the token against its Secret in
kube-system (exists, secret matches in constant time, unexpired, allowed to
authenticate) and that no Node of that name exists yet, then hands out the
credential of exactly that node. A node that already exists re-joins only
with its own credential (kept in its node.conf), never with a bootstrap
token, so a token holder cannot take over a running node's name. Deleting
the token's Secret stops new joins and touches nothing else.

With the join comes the agent endpoint's serving certificate: the agent
sends a certificate request, `sign_serving(node, csr)` (the cluster CA)
issues it for that node's name and its own addresses only (tls.py,
node_addresses.py), for a year, so the API server can tell the real agent
of a node from any listener the Node's address points at. A node may not
take a name the API server or a Service is known by.

Refusals say why, without telling whether a token id exists. This module
reaches storage only through the Registry.
"""

from __future__ import annotations

import datetime
import hmac
from collections.abc import Callable

from controlplane.api import bootstraptoken as bt
from controlplane.api.dnsnames import is_dns_subdomain
from controlplane.apiserver.auth import AUTHENTICATED, Identity
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import Forbidden, Invalid, NotFound, Unauthenticated

# Names clients verify the API server and Services by: no node may take one,
# or its serving certificate (signed by the cluster CA) would pose as them.
RESERVED_NAMES = frozenset({"skiff-apiserver", "localhost", "kubernetes", "kubernetes.default",
                            "kubernetes.default.svc"})  # fmt: skip
RESERVED_SUFFIXES = (".svc", ".svc.cluster.local", ".cluster.local", ".localhost")


class BootstrapJoin:
    """See the module docstring."""

    def __init__(
        self,
        registry: Registry,
        node_credential: Callable[[str], str],
        now: Callable[[], datetime.datetime] | None = None,
        sign_serving: Callable[[str, bytes], bytes] | None = None,
    ) -> None:
        self.registry = registry
        self.node_credential = node_credential
        self.sign_serving = sign_serving
        self.now = now or (lambda: datetime.datetime.now(datetime.UTC))

    def create(
        self, ttl: datetime.timedelta | None = None, description: str = "", token: str = ""
    ) -> str:
        """Store a bootstrap token (a random one unless given); return it."""
        token = token or bt.generate()
        self.registry.create(
            "Secret", bt.token_secret(token, self.now(), ttl, description), bt.NAMESPACE
        )
        return token

    def identity(self, token: str) -> Identity | None:
        """Who a bootstrap token is as a bearer token, as Kubernetes'
        bootstrap authenticator: user system:bootstrap:<id>, groups
        system:bootstrappers and the Secret's auth-extra-groups; None when
        the token is not (or no longer) valid for authentication."""
        try:
            token_id = self.check(token)
        except Unauthenticated:
            return None
        try:
            stored = self.registry.get_object("Secret", bt.secret_name(token_id), bt.NAMESPACE)
        except NotFound:
            return None
        found = bt.info(stored)
        extra = found.extra_groups if found is not None else ()
        return Identity(bt.USER_PREFIX + token_id,
                        groups=(bt.GROUP, *extra, AUTHENTICATED))  # fmt: skip

    def check(self, token: str) -> str:
        """The id of a valid bootstrap token; Unauthenticated (saying why) otherwise."""
        parts = bt.split(token)
        if parts is None:
            raise Unauthenticated(
                "invalid bootstrap token: expected <6>.<16> characters of [a-z0-9]"
            )
        token_id, token_secret = parts
        try:
            stored = self.registry.get_object("Secret", bt.secret_name(token_id), bt.NAMESPACE)
        except NotFound:
            stored = {}
        found = bt.info(stored)
        if (
            found is None
            or found.token_id != token_id
            or not hmac.compare_digest(
                bt.field(stored, "token-secret").encode(), token_secret.encode()
            )
        ):
            raise Unauthenticated("invalid bootstrap token (unknown, deleted or wrong secret)")
        if "authentication" not in found.usages:
            raise Unauthenticated(f"bootstrap token {token_id} may not be used to authenticate")
        if bt.expired(found.expiration, self.now()):
            raise Unauthenticated(f"bootstrap token {token_id} expired at {found.expiration}")
        return token_id

    def join(self, token: str, node: str, csr_pem: bytes = b"") -> tuple[str, bytes]:
        """The credential of the new node `node`, and its agent's serving
        certificate when `csr_pem` asks for one."""
        token_id = self.check(token)
        if not is_dns_subdomain(node):
            raise Invalid(f"node_name: {node!r} must be a DNS-1123 subdomain")
        if node in RESERVED_NAMES or node.endswith(RESERVED_SUFFIXES):
            raise Invalid(
                f"node_name: {node!r} is a name of the API server or of a Service; a node's "
                "serving certificate would let it pose as that"
            )
        try:
            self.registry.get("Node", node)
        except NotFound:
            return self.node_credential(node), self._serving(node, csr_pem)
        raise Forbidden(
            f'node "{node}" already exists: bootstrap token {token_id} joins new nodes only; '
            "re-join with that node's own credential, or delete the Node first"
        )

    def _serving(self, node: str, csr_pem: bytes) -> bytes:
        if not csr_pem:
            return b""
        if self.sign_serving is None:
            raise Invalid("serving_csr_pem: this server issues no agent certificates")
        try:
            return self.sign_serving(node, csr_pem)
        except ValueError as err:
            raise Invalid(str(err)) from None
