"""The bootstrap token format and its Secret layout, as Kubernetes has them.

A bootstrap token is `<id>.<secret>` (6 and 16 characters of [a-z0-9]),
stored as the Secret `bootstrap-token-<id>` in kube-system, of type
`bootstrap.kubernetes.io/token`, with the base64 keys token-id,
token-secret, expiration (RFC 3339, optional), description and
usage-bootstrap-authentication / usage-bootstrap-signing (kubeadm's layout,
so the same Secret means the same thing to Kubernetes tooling).

Pure functions: the server checks tokens with them (apiserver/bootstrap.py)
and `skiff token` writes and reads the Secrets with them.
"""

from __future__ import annotations

import base64
import datetime
import re
import secrets
import string
from dataclasses import dataclass
from typing import Any

from controlplane.client.errors import Invalid
from machinery.rfc3339 import format_datetime, parse_time

NAMESPACE = "kube-system"
SECRET_TYPE = "bootstrap.kubernetes.io/token"
PREFIX = "bootstrap-token-"
TOKEN_RE = re.compile(r"^([a-z0-9]{6})\.([a-z0-9]{16})$")
ID_RE = re.compile(r"^[a-z0-9]{6}$")
USAGES = ("authentication", "signing")
# Who a bootstrap token authenticates as (Kubernetes' bootstrap authenticator).
USER_PREFIX = "system:bootstrap:"
GROUP = "system:bootstrappers"
EXTRA_GROUP_PREFIX = "system:bootstrappers:"
_ALPHABET = string.ascii_lowercase + string.digits


def generate() -> str:
    """A new random token `<6>.<16>`."""
    return f"{_random(6)}.{_random(16)}"


def _random(n: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(n))


def split(token: str) -> tuple[str, str] | None:
    """(id, secret) of a well-formed token, else None."""
    match = TOKEN_RE.match(token or "")
    return (match[1], match[2]) if match else None


def token_id_of(token_or_id: str) -> str:
    """The id part of a token, or the id itself (Invalid if malformed)."""
    token_id = token_or_id.split(".", 1)[0]
    if not ID_RE.match(token_id):
        raise Invalid(f"token id: {token_id!r} must be 6 characters of [a-z0-9]")
    return token_id


def secret_name(token_id: str) -> str:
    return PREFIX + token_id


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def field(secret: dict[str, Any], key: str) -> str:
    """A data value of the Secret, decoded ("" when absent or undecodable)."""
    try:
        return base64.b64decode(str((secret.get("data") or {}).get(key) or "")).decode()
    except (ValueError, UnicodeDecodeError):
        return ""


def token_secret(
    token: str,
    now: datetime.datetime,
    ttl: datetime.timedelta | None = None,
    description: str = "",
    usages: tuple[str, ...] = USAGES,
) -> dict[str, Any]:
    """The Secret that stores `token` (expiring `ttl` after `now`; None: never)."""
    parts = split(token)
    if parts is None:
        raise Invalid(f"token: must match {TOKEN_RE.pattern}")
    for usage in usages:
        if usage not in USAGES:
            raise Invalid(f"usages: {usage!r} is not one of {', '.join(USAGES)}")
    data = {"token-id": _b64(parts[0]), "token-secret": _b64(parts[1])}
    if ttl is not None:
        data["expiration"] = _b64(format_datetime(now + ttl))
    if description:
        data["description"] = _b64(description)
    for usage in usages:
        data[f"usage-bootstrap-{usage}"] = _b64("true")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret_name(parts[0]), "namespace": NAMESPACE},
        "type": SECRET_TYPE,
        "data": data,
    }


@dataclass(frozen=True)
class TokenInfo:
    """What a token's Secret says, without its secret."""

    token_id: str
    expiration: str  # RFC 3339; "" = never
    usages: tuple[str, ...]
    description: str
    extra_groups: tuple[str, ...] = ()  # auth-extra-groups (system:bootstrappers:*)


def info(secret: dict[str, Any]) -> TokenInfo | None:
    """The token a Secret stores, or None when it is not a bootstrap token."""
    if secret.get("type") != SECRET_TYPE:
        return None
    return TokenInfo(
        field(secret, "token-id"),
        field(secret, "expiration"),
        tuple(u for u in USAGES if field(secret, f"usage-bootstrap-{u}") == "true"),
        field(secret, "description"),
        _extra_groups(field(secret, "auth-extra-groups")),
    )


def _extra_groups(value: str) -> tuple[str, ...]:
    """auth-extra-groups: only system:bootstrappers:* groups count."""
    return tuple(g.strip() for g in value.split(",") if g.strip().startswith(EXTRA_GROUP_PREFIX))


def expired(expiration: str, now: datetime.datetime) -> bool:
    """Whether an RFC 3339 expiration has passed (an unreadable one has)."""
    if not expiration:
        return False
    until = parse_time(expiration)
    if until is None:
        return True
    return until <= now.timestamp()
