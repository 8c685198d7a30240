"""The front proxy's credentials and what extension API servers are told of them.

kube-apiserver authenticates to an extension API server as a front proxy:
its client certificate (`--proxy-client-cert-file`) is signed by a CA of
its own (`--requestheader-client-ca-file`), and the caller's identity
travels in `X-Remote-User`, `X-Remote-Group` and `X-Remote-Extra-<key>`.
The extension server learns which CA and which names to trust from the
ConfigMap `extension-apiserver-authentication` in kube-system, which
kube-apiserver publishes; k3s names the files `request-header-ca.crt` and
`client-auth-proxy.crt` and the certificate's CN `system:auth-proxy`.

`ensure_front_proxy(data_dir)` loads or makes the CA and the certificate
under `<data-dir>/pki/` (a long-lived process runs it in a child:
controlplane.apiserver.pkifiles); `authentication_configmap` is the ConfigMap.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from machinery.atomicfile import write_private

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

PROXY_CN = "system:auth-proxy"
CA_CN = "skiff-request-header-ca"
USER_HEADER = "X-Remote-User"
GROUP_HEADER = "X-Remote-Group"
EXTRA_PREFIX = "X-Remote-Extra-"
CONFIGMAP = "extension-apiserver-authentication"
VALIDITY = datetime.timedelta(days=3650)


@dataclass(frozen=True)
class FrontProxy:
    ca_pem: bytes  # the request-header CA
    cert_pem: bytes  # the proxy's client certificate (CN system:auth-proxy)
    key_pem: bytes


def _certificate(
    subject: str, public: ec.EllipticCurvePublicKey, issuer: x509.Name,
    signer: ec.EllipticCurvePrivateKey, ca: bool,
) -> bytes:  # fmt: skip
    from cryptography.x509.oid import ExtendedKeyUsageOID

    from machinery import certificates

    if ca:
        extensions = certificates.ca_extensions()
    else:
        extensions = certificates.leaf_extensions([ExtendedKeyUsageOID.CLIENT_AUTH])
    name = certificates.common_name(subject)
    return certificates.issue(name, public, issuer, signer, VALIDITY, extensions)


FILES = ("request-header-ca.crt", "request-header-ca.key", "client-auth-proxy.crt",
         "client-auth-proxy.key")  # fmt: skip


def front_proxy_current(data_dir: Path) -> bool:
    """Whether ensure_front_proxy would make nothing."""
    return all((data_dir / "pki" / name).exists() for name in FILES)


def load_front_proxy(data_dir: Path) -> FrontProxy:
    pki = data_dir / "pki"
    return FrontProxy(*((pki / name).read_bytes() for name in (FILES[0], FILES[2], FILES[3])))


def ensure_front_proxy(data_dir: Path) -> FrontProxy:
    """The request-header CA and the proxy's certificate under data_dir/pki,
    made when missing (a new CA re-issues the certificate)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from machinery import certificates

    pki = data_dir / "pki"
    pki.mkdir(parents=True, exist_ok=True)
    ca_crt, ca_key = pki / "request-header-ca.crt", pki / "request-header-ca.key"
    crt, key = pki / "client-auth-proxy.crt", pki / "client-auth-proxy.key"
    if not ca_crt.exists() or not ca_key.exists():
        signer = certificates.new_key()
        name = certificates.common_name(CA_CN)
        write_private(ca_key, certificates.key_pem(signer), 0o600)
        write_private(ca_crt, _certificate(CA_CN, signer.public_key(), name, signer, True), 0o644)
        crt.unlink(missing_ok=True)
    if not crt.exists() or not key.exists():
        loaded = serialization.load_pem_private_key(ca_key.read_bytes(), None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{ca_key}: not an EC private key")
        issuer = x509.load_pem_x509_certificate(ca_crt.read_bytes()).subject
        own = certificates.new_key()
        write_private(key, certificates.key_pem(own), 0o600)
        write_private(crt, _certificate(PROXY_CN, own.public_key(), issuer, loaded, False), 0o644)
    return load_front_proxy(data_dir)


def authentication_configmap(client_ca_pem: bytes, proxy: FrontProxy) -> dict[str, Any]:
    """kube-system/extension-apiserver-authentication as kube-apiserver
    writes it: the client CA and the request-header facts (lists as JSON)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP, "namespace": "kube-system"},
        "data": {
            "client-ca-file": client_ca_pem.decode(),
            "requestheader-allowed-names": json.dumps([PROXY_CN]),
            "requestheader-client-ca-file": proxy.ca_pem.decode(),
            "requestheader-extra-headers-prefix": json.dumps([EXTRA_PREFIX]),
            "requestheader-group-headers": json.dumps([GROUP_HEADER]),
            "requestheader-username-headers": json.dumps([USER_HEADER]),
        },
    }
