"""The CSR signing controller: the built-in signers sign approved requests
with the cluster CA (kube-controller-manager's csrsigning).

A CertificateSigningRequest that is Approved (and not Denied or Failed),
has no certificate yet and names one of kubernetes.io/kube-apiserver-client,
kube-apiserver-client-kubelet or kubelet-serving is checked against that
signer's rules (controlplane/api/csr.py: the kubelet signers' subject, SAN
and usage rules; the client signer's usages). One that fails them gets the
Failed condition (reason SignerValidationFailure, the rule's message); the
others get `status.certificate`: the request's subject, SANs and public key,
the requested key usages, issued by the CA given by --cluster-signing-cert-file
and --cluster-signing-key-file (skiff controlplane passes its own CA), valid
from five minutes ago (clock skew, as Kubernetes backdates) for
spec.expirationSeconds, at most --cluster-signing-duration (a year by
default) and never past the CA's own end. Requests for other signers,
pending or denied ones are left alone.
"""

from __future__ import annotations

import base64
import copy
import datetime
import logging
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from controlplane.api import csr
from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.controllers.base import Controller, ControllerContext
from machinery import certificates, rfc3339

log = logging.getLogger(__name__)

KIND = "CertificateSigningRequest"
_KEY_USAGES = {"digital signature": "digital_signature", "signing": "digital_signature",
               "key encipherment": "key_encipherment"}  # fmt: skip
_EXT_USAGES = {"client auth": ExtendedKeyUsageOID.CLIENT_AUTH,
               "server auth": ExtendedKeyUsageOID.SERVER_AUTH}  # fmt: skip


class SigningAuthority:
    """The CA key and certificate the signers sign with, and the longest
    certificate they issue."""

    def __init__(self, cert_pem: bytes, key_pem: bytes, max_duration: datetime.timedelta) -> None:
        self.cert = x509.load_pem_x509_certificate(cert_pem)
        key = serialization.load_pem_private_key(key_pem, None)
        if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
            raise ValueError("the signing key must be an ECDSA or RSA private key")
        self.key = key
        self.max_duration = max_duration

    @classmethod
    def from_files(cls, cert: str, key: str, max_duration: datetime.timedelta) -> SigningAuthority:
        return cls(Path(cert).read_bytes(), Path(key).read_bytes(), max_duration)

    def sign(self, request: x509.CertificateSigningRequest, usages: list[str],
             expiration_seconds: int | None, now: datetime.datetime) -> bytes:  # fmt: skip
        """The PEM certificate for `request` (see the module docstring)."""
        duration = self.max_duration
        if expiration_seconds is not None:
            duration = min(duration, datetime.timedelta(seconds=expiration_seconds))
        not_after = min(now + duration, self.cert.not_valid_after_utc)
        public = request.public_key()
        if not isinstance(public, ec.EllipticCurvePublicKey | rsa.RSAPublicKey
                          | ed25519.Ed25519PublicKey):  # fmt: skip
            raise ValueError("unsupported public key type")
        flags = {v: False for v in _KEY_USAGES.values()}
        for usage in usages:
            if usage in _KEY_USAGES:
                flags[_KEY_USAGES[usage]] = True
        extensions: list[certificates.Extension] = [
            (x509.BasicConstraints(ca=False, path_length=None), True)
        ]
        if any(flags.values()):  # no key usage asked for: no extension (as Go writes it)
            extensions.append((
                x509.KeyUsage(content_commitment=False, data_encipherment=False,
                              key_agreement=False, key_cert_sign=False, crl_sign=False,
                              encipher_only=False, decipher_only=False, **flags),
                True,
            ))  # fmt: skip
        ext = [_EXT_USAGES[u] for u in usages if u in _EXT_USAGES]
        if ext:
            extensions.append((x509.ExtendedKeyUsage(ext), False))
        try:
            sans = request.extensions.get_extension_for_class(x509.SubjectAlternativeName)
            extensions.append((sans.value, False))
        except x509.ExtensionNotFound:
            pass
        issuer_key = x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key())
        extensions.append((issuer_key, False))
        lifetime = not_after - now
        issuer = self.cert.subject
        return certificates.issue(
            request.subject, public, issuer, self.key, lifetime, extensions, now
        )


class CsrSigningController(Controller):
    name = "csrsigning"
    default_workers = 2

    def __init__(self, ctx: ControllerContext, authority: SigningAuthority) -> None:
        super().__init__(ctx)
        self.authority = authority
        self.requests = self.watch_primary(KIND)

    def sync(self, key: str) -> float | None:
        obj = self.requests.store.get(key)
        if obj is None or not csr.is_approved(obj) or csr.has_condition(obj, csr.FAILED):
            return None
        spec: Any = obj.get("spec") or {}
        signer = spec.get("signerName")
        if signer not in csr.BUILTIN_SIGNERS or (obj.get("status") or {}).get("certificate"):
            return None
        try:
            request = csr.parse_request(csr.request_pem(spec))
        except csr.RequestError as err:  # validation refused these: an old object
            self._write(obj, failed=f"unable to parse csr {key!r}: {err}")
            return None
        usages = [str(u) for u in spec.get("usages") or []]
        problem = csr.signer_problem(signer, request, usages)
        if problem:
            self._write(obj, failed=problem)
            return None
        expiration = spec.get("expirationSeconds")
        pem = self.authority.sign(
            request, usages, expiration if isinstance(expiration, int) else None,
            datetime.datetime.now(datetime.UTC),
        )  # fmt: skip
        self._write(obj, certificate=pem)
        return None

    def _write(self, obj: Object, failed: str = "", certificate: bytes = b"") -> None:
        """The status write, at the version read (a Conflict re-queues the request)."""
        body = copy.deepcopy(obj)
        status = body.setdefault("status", {})
        if failed:
            now = rfc3339.now()
            status.setdefault("conditions", []).append({
                "type": csr.FAILED, "status": "True", "reason": "SignerValidationFailure",
                "message": failed, "lastUpdateTime": now, "lastTransitionTime": now,
            })  # fmt: skip
            log.info("csrsigning: %s failed: %s", body["metadata"].get("name"), failed)
        else:
            status["certificate"] = base64.b64encode(certificate).decode()
        try:
            self.client.update_status(KIND, body)
        except errors.NotFound:
            pass


def init(ctx: ControllerContext) -> Controller | None:
    config = ctx.config
    if not config.cluster_signing_cert_file or not config.cluster_signing_key_file:
        log.info("csrsigning: no --cluster-signing-cert-file/--cluster-signing-key-file")
        return None
    authority = SigningAuthority.from_files(
        config.cluster_signing_cert_file,
        config.cluster_signing_key_file,
        datetime.timedelta(seconds=config.cluster_signing_duration),
    )
    return CsrSigningController(ctx, authority)
