"""Who is calling: the one authentication step both front doors share.

The gRPC servicers and the Kubernetes REST API both turn a request's bearer
token into an Identity here, and hand that Identity to the registry (whose
`identity=` parameters run authorization). Neither front door authenticates
or authorizes in any other way. The REST API also takes a client
certificate the cluster CA issued (TLS verified it: the chain, its dates and
the client-auth usage), as kube-apiserver's x509 authenticator: the subject's
CN is the user, each O a group (`certificate_identity`); so does the gRPC API
for the connections the front door relays (relayedpeers.py). `identify`
orders them as kube-apiserver's authenticators are: the certificate first,
else the bearer token. This module never touches a transport.
"""

from __future__ import annotations

import ssl
import time
from typing import Any

from controlplane.apiserver.auth import (
    AUTHENTICATED,
    MASTERS_GROUP,
    NODES_GROUP,
    Identity,
    TokenAuthority,
)
from controlplane.client.errors import Unauthenticated

# Without an authority (in-process tests) everyone is the admin.
ANONYMOUS_ADMIN = Identity("admin", admin=True)


def bearer_token(header: str) -> str:
    """The token of an `Authorization: Bearer TOKEN` value ("" when none)."""
    if header[:7].lower() == "bearer ":
        return header[7:].strip()
    return ""


def authenticate(authority: TokenAuthority | None, token: str) -> Identity:
    """The Identity a bearer token proves; Unauthenticated when it proves none."""
    if authority is None:
        return ANONYMOUS_ADMIN
    if not token:
        raise Unauthenticated("no bearer token (authorization: Bearer TOKEN)")
    identity = authority.authenticate(token)
    if identity is None:
        raise Unauthenticated("invalid bearer token")
    return identity


def certificate_identity(peercert: Any, now: float | None = None) -> Identity | None:
    """The Identity a verified client certificate (ssl's getpeercert() dict)
    proves: CN the user, each O a group, system:authenticated added; a
    system:node:NAME in system:nodes is node NAME. None without a
    certificate, without a CN, or once it expired (a connection may outlive
    its certificate: checked at every request, as Go's authenticator does)."""
    if not isinstance(peercert, dict) or not peercert.get("subject"):
        return None
    try:
        not_after = ssl.cert_time_to_seconds(str(peercert.get("notAfter")))
    except ValueError:
        return None
    if (time.time() if now is None else now) >= not_after:
        return None
    user, groups = "", []
    for rdn in peercert["subject"]:
        for key, value in rdn:
            if key == "commonName" and not user:
                user = str(value)
            elif key == "organizationName":
                groups.append(str(value))
    if not user:
        return None
    if AUTHENTICATED not in groups:
        groups.append(AUTHENTICATED)
    node = None
    if user.startswith("system:node:") and NODES_GROUP in groups:
        node = user.removeprefix("system:node:") or None
    return Identity(user, admin=MASTERS_GROUP in groups, node=node, groups=tuple(groups))


def identify(authority: TokenAuthority | None, peercert: Any, token: str) -> Identity:
    """Who a request is: its verified client certificate's subject (a
    node's only while its Node holds, as a deleted Node's certificates end
    with it, and only one signed since the node last joined), else its
    bearer token's; Unauthenticated when neither proves anyone."""
    who = certificate_identity(peercert) if authority is not None and peercert else None
    if who is not None and who.node is not None and authority is not None:
        holds = authority.node_certificates
        if holds is not None and not holds(who.node, _not_before(peercert)):
            who = None
    return who if who is not None else authenticate(authority, token)


def _not_before(peercert: Any) -> float:
    try:
        return float(ssl.cert_time_to_seconds(str(peercert.get("notBefore"))))
    except (ValueError, AttributeError):
        return 0.0
