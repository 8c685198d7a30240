"""The cluster PKI and token secret, generated on first start (as k3s does).

Under `<data-dir>/pki/`: `ca.crt`/`ca.key` (a self-signed ECDSA P-256 CA),
`server.crt`/`server.key` (the API server's serving certificate, signed by
the CA, valid for `skiff-apiserver`, `localhost`, the host name, 127.0.0.1,
::1 and every extra SAN given), `token-secret` (the HMAC key of every
bearer token), `sa.key` (the ECDSA key that signs ServiceAccount tokens) and
`apiserver-agent-client.crt`/`.key` (the API server's client certificate
towards node agents, CN `system:apiserver`, the only caller agents serve).
Existing files are reused; the serving certificate is re-issued when a
requested SAN is missing. Private files are written 0600 atomically.

Lifetimes are k3s': the CA ten years, the serving and client certificates
one year (LEAF_VALIDITY). At every start a leaf certificate within
ROTATE_WITHIN (90 days) of its expiry, or past it, is re-issued (k3s does
the same); `rotate` re-issues named ones on demand (`skiff certificate
rotate`); `expirations` tells each certificate's expiry (for metrics). A
running API server takes up a re-issued serving certificate at the next
handshake (certreload.py).

`sign_agent_csr` issues a node agent's serving certificate at join, as k3s
signs them: DNS SAN the node's name (what the API server checks when it
dials the agent) and the node's own addresses, nothing else (no other name,
no wildcard; no loopback, link-local, multicast or unspecified address; the
caller refuses what else it knows to be someone else's: the API server's
names, the Service range, other nodes' addresses), valid for a year as
kubelet serving certificates are.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from machinery import x509read
from machinery.atomicfile import write_private

if TYPE_CHECKING:  # loaded where a certificate is made (in a child: pkifiles.py)
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

# Clients pin the CA and ask for this name, whatever address they dial.
SERVER_NAME = "skiff-apiserver"
# The identity agents accept: the API server's client certificate.
AGENT_CLIENT_CN = "system:apiserver"
MAX_AGENT_SANS = 16
VALIDITY = datetime.timedelta(days=3650)  # the CA's
LEAF_VALIDITY = datetime.timedelta(days=365)  # serving and client certificates
ROTATE_WITHIN = datetime.timedelta(days=90)  # k3s' renewal window
# The leaf certificates under pki/, by the k3s service that owns them.
SERVICES = {"api-server": ("server.crt", "apiserver-agent-client.crt")}
# A node agent's serving certificate: a year, as the kubelet's.
AGENT_VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class Pki:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes
    token_secret: bytes
    sa_key_pem: bytes = b""
    agent_client_cert_pem: bytes = b""
    agent_client_key_pem: bytes = b""
    ca_key_pem: bytes = b""  # for sign_agent_csr
    pki_dir: str = ""  # where the files are (the serving certificate is followed there)


def _sans(extra: list[str]) -> tuple[set[str], set[str]]:
    dns = {SERVER_NAME, "localhost", socket.gethostname()}
    ips = {"127.0.0.1", "::1"}
    for san in extra:
        if not san or san in ("0.0.0.0", "::"):
            continue
        try:
            ips.add(str(ipaddress.ip_address(san)))
        except ValueError:
            dns.add(san)
    return dns, ips


def _sign(
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    subject: str,
    public_key: ec.EllipticCurvePublicKey,
    usage: x509.ObjectIdentifier,
    names: list[x509.GeneralName],
    validity: datetime.timedelta = LEAF_VALIDITY,
) -> bytes:
    from cryptography import x509

    from machinery import certificates

    extensions = certificates.leaf_extensions([usage])
    if names:
        extensions.append((x509.SubjectAlternativeName(names), False))
    subject_name = certificates.common_name(subject)
    return certificates.issue(
        subject_name, public_key, ca_cert.subject, ca_key, validity, extensions
    )


def _issue_server(
    ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, dns: set[str], ips: set[str]
) -> tuple[bytes, bytes]:
    from cryptography import x509

    from machinery import certificates

    key = certificates.new_key()
    names: list[x509.GeneralName] = [x509.DNSName(d) for d in sorted(dns)]
    names += [x509.IPAddress(ipaddress.ip_address(i)) for i in sorted(ips)]
    usage = x509.oid.ExtendedKeyUsageOID.SERVER_AUTH
    cert = _sign(ca_key, ca_cert, SERVER_NAME, key.public_key(), usage, names)
    return cert, certificates.key_pem(key)


def address_problem(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address, loopback: bool = False
) -> str | None:
    """Why no node may have `ip` in its serving certificate (None: it may);
    `loopback`: a loopback address is acceptable (in a Node's status, where
    a node on the control plane's own host names it)."""
    if ip.is_loopback and not loopback:
        return "a loopback address names every host (the API server's own among them)"
    if ip.is_unspecified or ip.is_multicast or ip.is_link_local or ip.is_reserved:
        return "not the address of one host"
    return None


def sign_agent_csr(
    pki: Pki, node: str, csr_pem: bytes,
    refuse: Callable[[ipaddress.IPv4Address | ipaddress.IPv6Address], str | None] | None = None,
) -> bytes:  # fmt: skip
    """The serving certificate of node `node`'s agent, for the key in `csr_pem`.

    Its DNS SAN is `node`; its IP SANs are the CSR's addresses (at most
    MAX_AGENT_SANS names in all), each of which must pass `address_problem`
    and `refuse` (the caller's: addresses it knows to be someone else's).
    Raises ValueError naming the problem for a CSR that does not parse, is
    not self-signed by its key, is not an EC P-256 key, or asks for another
    name or a refused address."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    try:
        csr = x509.load_pem_x509_csr(csr_pem)
    except ValueError as err:
        raise ValueError(f"serving_csr_pem: not a PEM certificate request ({err})") from None
    if not csr.is_signature_valid:
        raise ValueError("serving_csr_pem: the request is not signed by its own key")
    public = csr.public_key()
    if not isinstance(public, ec.EllipticCurvePublicKey) or public.curve.name != "secp256r1":
        raise ValueError("serving_csr_pem: the key must be ECDSA P-256")
    ips: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    try:
        san = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        san = x509.SubjectAlternativeName([])
    for name in san:
        if isinstance(name, x509.DNSName) and name.value == node:
            continue
        if not isinstance(name, x509.IPAddress) or not isinstance(
            name.value, ipaddress.IPv4Address | ipaddress.IPv6Address
        ):
            raise ValueError(
                f"serving_csr_pem: {name.value!s}: a node's serving certificate names only the "
                f'node ("{node}") and its own IP addresses'
            )
        if name.value not in ips:
            ips.append(name.value)
    if 1 + len(ips) > MAX_AGENT_SANS:
        raise ValueError(f"serving_csr_pem: more than {MAX_AGENT_SANS} names asked for")
    for ip in ips:
        problem = address_problem(ip) or (refuse(ip) if refuse is not None else None)
        if problem:
            raise ValueError(f"serving_csr_pem: IP address {ip}: {problem}")
    names: list[x509.GeneralName] = [x509.DNSName(node)]
    names += [x509.IPAddress(i) for i in sorted(ips, key=lambda i: (i.version, int(i)))]
    ca_key = serialization.load_pem_private_key(pki.ca_key_pem, None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the cluster CA key is not an EC private key")
    ca_cert = x509.load_pem_x509_certificate(pki.ca_pem)
    usage = x509.oid.ExtendedKeyUsageOID.SERVER_AUTH
    return _sign(ca_key, ca_cert, f"system:node:{node}", public, usage, names, AGENT_VALIDITY)


def certificate_addresses(cert_pem: bytes) -> tuple[set[str], set[str]]:
    """(DNS names, IP addresses) a certificate is valid for."""
    return x509read.alt_names(cert_pem)


def _covers(cert_pem: bytes, dns: set[str], ips: set[str]) -> bool:
    have_dns, have_ips = certificate_addresses(cert_pem)
    return dns <= have_dns and ips <= have_ips


def not_after(cert_pem: bytes) -> datetime.datetime:
    return x509read.not_after(cert_pem)


def _fresh(path: Path, now: datetime.datetime | None = None) -> bool:
    """The certificate at `path` exists, is not within ROTATE_WITHIN of expiry,
    and lasts no longer than LEAF_VALIDITY (an older skiff's ten-year leaf is
    re-issued once, so an upgraded data dir gets bounded lifetimes too)."""
    try:
        expiry = not_after(path.read_bytes())
    except (OSError, ValueError):
        return False
    left = expiry - (now or datetime.datetime.now(datetime.UTC))
    return ROTATE_WITHIN < left <= LEAF_VALIDITY + datetime.timedelta(days=1)


def expirations(data_dir: Path) -> dict[str, float]:
    """Each certificate under pki/ (file name) -> its notAfter, in unix seconds.
    For skiff_certificate_expiration_seconds; unreadable files are left out."""
    found: dict[str, float] = {}
    for path in sorted((Path(data_dir) / "pki").glob("*.crt")):
        try:
            found[path.name] = not_after(path.read_bytes()).timestamp()
        except (OSError, ValueError):
            continue
    return found


def rotate(data_dir: Path, services: list[str] | None = None) -> list[str]:
    """Remove the leaf certificates of `services` (all: None) so that the next
    ensure_pki re-issues them; the files removed. ValueError for an unknown service."""
    names = services or list(SERVICES)
    unknown = [n for n in names if n not in SERVICES]
    if unknown:
        raise ValueError(f"unknown service {unknown[0]!r}; known: {', '.join(SERVICES)}")
    removed = []
    for name in names:
        for crt in SERVICES[name]:
            path = Path(data_dir) / "pki" / crt
            if path.exists():
                path.unlink()
                removed.append(crt)
    return removed


def pki_current(data_dir: Path, extra_sans: list[str] | None = None) -> bool:
    """Whether ensure_pki would find everything in place and make nothing
    (read without cryptography: a start that finds it so makes no child)."""
    pki = data_dir / "pki"
    crt = pki / "server.crt"
    files = ("ca.crt", "ca.key", "server.crt", "server.key", "token-secret", "sa.key",
             "apiserver-agent-client.key")  # fmt: skip
    if not all((pki / name).exists() for name in files):
        return False
    dns, ips = _sans(extra_sans or [])
    try:
        covered = _covers(crt.read_bytes(), dns, ips)
    except (OSError, ValueError):
        return False
    return covered and _fresh(crt) and _fresh(pki / "apiserver-agent-client.crt")


def load_pki(data_dir: Path) -> Pki:
    """The PKI ensure_pki made under data_dir/pki, read from its files."""
    pki = data_dir / "pki"
    os.chmod(pki, 0o700)
    crt, key, secret_path = pki / "server.crt", pki / "server.key", pki / "token-secret"
    client_crt, client_key = pki / "apiserver-agent-client.crt", pki / "apiserver-agent-client.key"
    return Pki((pki / "ca.crt").read_bytes(), crt.read_bytes(), key.read_bytes(),
               secret_path.read_bytes().strip(), (pki / "sa.key").read_bytes(),
               client_crt.read_bytes(), client_key.read_bytes(), (pki / "ca.key").read_bytes(),
               str(pki))  # fmt: skip


def ensure_pki(data_dir: Path, extra_sans: list[str] | None = None) -> Pki:
    """Load the PKI under data_dir/pki, creating whatever is missing (in
    this process: a long-lived one runs pkifiles.ensure instead)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from machinery import certificates

    pki = data_dir / "pki"
    pki.mkdir(parents=True, exist_ok=True)
    os.chmod(pki, 0o700)
    ca_crt, ca_key_path = pki / "ca.crt", pki / "ca.key"
    if not ca_crt.exists() or not ca_key_path.exists():
        ca_key = certificates.new_key()
        subject = certificates.common_name("skiff-ca")
        ca_cert_pem = certificates.self_signed(
            subject, ca_key, VALIDITY, certificates.ca_extensions()
        )
        write_private(ca_key_path, certificates.key_pem(ca_key), 0o600)
        write_private(ca_crt, ca_cert_pem, 0o644)
        for stale in ("server.crt", "server.key", "apiserver-agent-client.crt"):
            (pki / stale).unlink(missing_ok=True)
    ca_pem = ca_crt.read_bytes()
    loaded_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), None)
    if not isinstance(loaded_key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{ca_key_path}: not an EC private key")
    dns, ips = _sans(extra_sans or [])
    crt, key = pki / "server.crt", pki / "server.key"
    if (not crt.exists() or not key.exists() or not _covers(crt.read_bytes(), dns, ips)
            or not _fresh(crt)):  # fmt: skip
        cert_pem, key_pem = _issue_server(
            loaded_key, x509.load_pem_x509_certificate(ca_pem), dns, ips
        )
        write_private(key, key_pem, 0o600)
        write_private(crt, cert_pem, 0o644)
    secret_path = pki / "token-secret"
    if not secret_path.exists():
        write_private(secret_path, secrets.token_hex(32).encode(), 0o600)
    sa_key = pki / "sa.key"
    if not sa_key.exists():
        write_private(sa_key, certificates.key_pem(certificates.new_key()), 0o600)
    client_crt, client_key = pki / "apiserver-agent-client.crt", pki / "apiserver-agent-client.key"
    if not client_key.exists() or not _fresh(client_crt):
        ckey = certificates.new_key()
        usage = x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH
        ca_cert = x509.load_pem_x509_certificate(ca_pem)
        write_private(client_key, certificates.key_pem(ckey), 0o600)
        write_private(client_crt, _sign(loaded_key, ca_cert, AGENT_CLIENT_CN, ckey.public_key(),
                                        usage, []), 0o644)  # fmt: skip
    return load_pki(data_dir)
