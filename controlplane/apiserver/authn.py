"""Who is calling: the one authentication step both front doors share.

The gRPC servicers and the Kubernetes REST API both turn a request's bearer
token into an Identity here, and hand that Identity to the registry (whose
`identity=` parameters run authorization). Neither front door authenticates
or authorizes in any other way. This module never touches a transport.
"""

from __future__ import annotations

from controlplane.apiserver.auth import Identity, TokenAuthority
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
