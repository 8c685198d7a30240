"""ServiceAccount tokens: bound, expiring, audience-scoped JWTs (TokenRequest).

Issued as Kubernetes issues them: an ES256 JWT signed with `pki/sa.key`,
claims iss, sub (`system:serviceaccount:NS:NAME`), aud, iat, nbf, exp and
`kubernetes.io` (namespace, the ServiceAccount's name and uid, and the pod
it is bound to, if any). The API server accepts a token only when its
signature and times are valid, its audiences include the API server's,
the ServiceAccount still exists with the same uid and, for a bound token,
the pod still exists with the same uid and is not being deleted: deleting
either revokes the token. A token for another audience is refused here
(it is meant for someone else).

Checked tokens are remembered for at most `RECHECK` seconds (bounded), so
a request does not cost a signature check and two lookups every time.

`cryptography` (about 9 MB) is loaded with the first token issued or
checked, not at start: a control plane whose pods mount no token never
loads it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from controlplane.apiserver.auth import AUTHENTICATED, Identity
from machinery import x509read

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import ec

ISSUER = "https://kubernetes.default.svc.cluster.local"
API_AUDIENCES = (ISSUER,)
SA_PREFIX = "system:serviceaccount:"
MIN_EXPIRATION = 600  # seconds, as Kubernetes has it
MAX_EXPIRATION = 48 * 3600
RECHECK = 10.0
CACHED = 10_000

# (kind, namespace, name) -> the object, or None when it does not exist.
Lookup = Callable[[str, str, str], dict[str, Any] | None]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class Issued:
    token: str
    expires: int  # unix seconds


def _check_key_block(key_pem: bytes) -> None:
    """ValueError unless `key_pem` holds a whole PEM block of a private key
    (the key itself is parsed at its first use, with cryptography)."""
    for label in (b"EC PRIVATE KEY", b"PRIVATE KEY"):
        begin, end = b"-----BEGIN " + label + b"-----", b"-----END " + label + b"-----"
        if begin in key_pem:
            try:
                x509read.pem_to_der(key_pem, begin, end)
            except ValueError as err:
                raise ValueError(f"sa.key: {err}") from None
            return
    raise ValueError("sa.key: no PEM block of a private key")


class ServiceAccountTokens:
    """See the module docstring."""

    def __init__(
        self, key_pem: bytes, lookup: Lookup, now: Callable[[], float] | None = None
    ) -> None:
        _check_key_block(key_pem)  # a wrong or torn file is refused at start
        self._key_pem = key_pem
        self._loaded: tuple[ec.EllipticCurvePrivateKey, str] | None = None
        self._lookup = lookup
        self._now = now or time.time
        self._lock = threading.Lock()
        self._checked: dict[str, tuple[float, Identity]] = {}

    def _signer(self) -> tuple[ec.EllipticCurvePrivateKey, str]:
        """(the key, its key id), loaded at the first use."""
        if self._loaded is None:
            from cryptography.hazmat.primitives import serialization
            from cryptography.hazmat.primitives.asymmetric import ec

            key = serialization.load_pem_private_key(self._key_pem, None)
            if not isinstance(key, ec.EllipticCurvePrivateKey):
                raise ValueError("sa.key: not an EC private key")
            der = key.public_key().public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            self._loaded = key, _b64(hashlib.sha256(der).digest())[:32]
        return self._loaded

    @property
    def kid(self) -> str:
        return self._signer()[1]

    def issue(
        self,
        namespace: str,
        account: dict[str, Any],
        audiences: list[str],
        expiration_seconds: int,
        pod: dict[str, Any] | None = None,
    ) -> Issued:
        now = int(self._now())
        name = str(account["metadata"]["name"])
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "sub": f"{SA_PREFIX}{namespace}:{name}",
            "aud": audiences,
            "iat": now,
            "nbf": now,
            "exp": now + expiration_seconds,
            "kubernetes.io": {
                "namespace": namespace,
                "serviceaccount": {"name": name, "uid": account["metadata"].get("uid", "")},
            },
        }
        if pod is not None:
            claims["kubernetes.io"]["pod"] = {
                "name": pod["metadata"]["name"], "uid": pod["metadata"].get("uid", "")}  # fmt: skip
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

        key, kid = self._signer()
        header = {"alg": "ES256", "kid": kid, "typ": "JWT"}
        signing_input = (
            _b64(json.dumps(header, separators=(",", ":")).encode())
            + "."
            + _b64(json.dumps(claims, separators=(",", ":")).encode())
        )
        der = key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
        return Issued(f"{signing_input}.{_b64(signature)}", now + expiration_seconds)

    def claims(self, token: str) -> dict[str, Any] | None:
        """The claims of a token this server signed and that has not expired."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

        public = self._signer()[0].public_key()
        try:
            header = json.loads(_unb64(parts[0]))
            raw = _unb64(parts[2])
            if header.get("alg") != "ES256" or len(raw) != 64:
                return None
            signature = encode_dss_signature(
                int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")
            )
            public.verify(signature, f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
            claims: dict[str, Any] = json.loads(_unb64(parts[1]))
        except (ValueError, InvalidSignature, TypeError):
            return None
        now = self._now()
        if claims.get("iss") != ISSUER:
            return None
        if not isinstance(claims.get("exp"), int) or claims["exp"] <= now:
            return None
        if isinstance(claims.get("nbf"), int) and claims["nbf"] > now + 60:
            return None
        return claims

    def authenticate(self, token: str, audiences: Sequence[str] = API_AUDIENCES) -> Identity | None:
        """The account a token authenticates for one of `audiences` (the API
        server's own unless a TokenReview asks about others), or None."""
        now = self._now()
        key = token if tuple(audiences) == API_AUDIENCES else f"{token} {' '.join(audiences)}"
        with self._lock:
            hit = self._checked.get(key)
            if hit is not None and hit[0] > now:
                return hit[1]
        claims = self.claims(token)
        if claims is None:
            return None
        granted = claims.get("aud") or []
        if not isinstance(granted, list) or not set(granted) & set(audiences):
            return None  # a token for someone else
        identity = self._still_valid(claims)
        if identity is None:
            return None
        with self._lock:
            if len(self._checked) >= CACHED:
                self._checked.clear()
            self._checked[key] = (min(now + RECHECK, float(claims["exp"])), identity)
        return identity

    def _still_valid(self, claims: dict[str, Any]) -> Identity | None:
        info = claims.get("kubernetes.io") or {}
        namespace = str(info.get("namespace") or "")
        account = info.get("serviceaccount") or {}
        name = str(account.get("name") or "")
        if claims.get("sub") != f"{SA_PREFIX}{namespace}:{name}":
            return None
        found = self._lookup("ServiceAccount", namespace, name)
        if found is None or (found.get("metadata") or {}).get("uid") != account.get("uid"):
            return None
        pod = info.get("pod")
        if pod:
            live = self._lookup("Pod", namespace, str(pod.get("name") or ""))
            meta = (live or {}).get("metadata") or {}
            if live is None or meta.get("uid") != pod.get("uid") or meta.get("deletionTimestamp"):
                return None
        return Identity(
            f"{SA_PREFIX}{namespace}:{name}",
            groups=(
                "system:serviceaccounts",
                f"system:serviceaccounts:{namespace}",
                AUTHENTICATED,
            ),
            uid=str(account.get("uid") or ""),
        )


def expiration(requested: Any) -> int:
    """A TokenRequest's expirationSeconds, defaulted (1 h) and bounded."""
    if requested is None:
        return 3600
    if isinstance(requested, bool) or not isinstance(requested, int):
        raise ValueError(f"spec.expirationSeconds: must be an integer, not {requested!r}")
    if requested < MIN_EXPIRATION:
        raise ValueError(f"spec.expirationSeconds: may not be less than {MIN_EXPIRATION}")
    return min(requested, MAX_EXPIRATION)
