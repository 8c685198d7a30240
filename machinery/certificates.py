"""X.509 certificates, keys and signing requests as skiff makes them: the one
home of the certificate builder.

Keys are ECDSA P-256 and written as unencrypted PKCS#8 PEM; everything is
signed with SHA-256. A certificate is valid from BACKDATE before it is made
(Kubernetes backdates five minutes, for clocks a little behind the issuer's)
until `lifetime` after; its extensions are written in the order given (that
order is part of the DER, so callers keep theirs). What a certificate says
(subject, issuer, lifetime, usages, names) is the caller's policy: the API
server's PKI, the front proxy's, the CSR signers', the self-signed serving
certificates of components and of the ingress.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable, Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import (
    CertificateIssuerPrivateKeyTypes,
    CertificatePublicKeyTypes,
    PrivateKeyTypes,
)
from cryptography.x509.oid import NameOID

BACKDATE = datetime.timedelta(minutes=5)
# An extension and whether it is critical.
Extension = tuple[x509.ExtensionType, bool]


def new_key() -> ec.EllipticCurvePrivateKey:
    """A fresh ECDSA P-256 private key."""
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: PrivateKeyTypes) -> bytes:
    """`key` as unencrypted PKCS#8 PEM."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def common_name(cn: str) -> x509.Name:
    """The name whose only attribute is the common name `cn`."""
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def ca_extensions() -> list[Extension]:
    """A CA that signs only leaf certificates (path length 0), with the key
    usages of kubeadm's and k3s' CAs: digital signature, certificate and CRL
    signing."""
    usage = x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=False,
        data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
        encipher_only=False, decipher_only=False,
    )  # fmt: skip
    return [(x509.BasicConstraints(ca=True, path_length=0), True), (usage, True)]


def leaf_extensions(usages: Sequence[x509.ObjectIdentifier]) -> list[Extension]:
    """A certificate that is no CA, for the extended key `usages`."""
    return [
        (x509.BasicConstraints(ca=False, path_length=None), True),
        (x509.ExtendedKeyUsage(list(usages)), False),
    ]


def issue(
    subject: x509.Name,
    public_key: CertificatePublicKeyTypes,
    issuer: x509.Name,
    signer: CertificateIssuerPrivateKeyTypes,
    lifetime: datetime.timedelta,
    extensions: Iterable[Extension] = (),
    now: datetime.datetime | None = None,
) -> bytes:
    """The PEM certificate of `public_key` for `subject`, issued by `issuer`
    (signed with its key `signer`), valid from BACKDATE before `now` (the
    current time: None) to `lifetime` after it."""
    now = now or datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + lifetime)
    )
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical=critical)
    return builder.sign(signer, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def self_signed(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    lifetime: datetime.timedelta,
    extensions: Iterable[Extension] = (),
    now: datetime.datetime | None = None,
) -> bytes:
    """The PEM certificate of `key` for `subject`, issued and signed by itself."""
    return issue(subject, key.public_key(), subject, key, lifetime, extensions, now)


def signing_request(
    subject: x509.Name, names: Sequence[x509.GeneralName] = ()
) -> tuple[bytes, bytes]:
    """(private key PEM, CSR PEM): a new key and its request for `subject`,
    with the subject alternative `names` (none: no extension)."""
    key = new_key()
    builder = x509.CertificateSigningRequestBuilder().subject_name(subject)
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    csr = builder.sign(key, hashes.SHA256())
    return key_pem(key), csr.public_bytes(serialization.Encoding.PEM)


SUBJECT_ATTRIBUTES = {"CN": NameOID.COMMON_NAME, "O": NameOID.ORGANIZATION_NAME}


def request_pems(subject: list[list[str]], dns: list[str], ips: list[str]) -> list[str]:
    """(Run in a child: machinery.certrequest.) [private key PEM, CSR PEM] of
    signing_request for the `subject` attributes in order ([["O", ...],
    ["CN", ...]]) and the alternative names, DNS names first."""
    name = x509.Name(
        [x509.NameAttribute(SUBJECT_ATTRIBUTES[kind], value) for kind, value in subject]
    )
    names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    key_pem, csr_pem = signing_request(name, names)
    return [key_pem.decode(), csr_pem.decode()]
