"""The signing authority of the CSR signing controller (csrsigning.py): the
certificate of an approved request, made with the CA's key. It runs in a
short-lived child (machinery.inchild: `sign`), so that the controller
manager's long-lived process never loads `cryptography`.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from machinery import certificates

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


def sign(cert_pem: str, key_pem: str, max_seconds: float, request_pem: str, usages: list[str],
         expiration_seconds: int | None, now: float) -> str:  # fmt: skip
    """(In the child.) SigningAuthority.sign, its arguments and result as text."""
    authority = SigningAuthority(cert_pem.encode(), key_pem.encode(),
                                 datetime.timedelta(seconds=max_seconds))  # fmt: skip
    request = x509.load_pem_x509_csr(request_pem.encode())
    at = datetime.datetime.fromtimestamp(now, datetime.UTC)
    return authority.sign(request, usages, expiration_seconds, at).decode()
