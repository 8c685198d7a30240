"""The agent endpoint's TLS: the serving certificate from join, the cluster CA.

At join the agent sends a certificate request (controlplane.client.agents.
agent_csr) and keeps the certificate the control plane's CA returns, with
its key, as `serving.crt` and `serving.key` (0600) in its root directory.
`server_context` builds the endpoint's TLS: that certificate, TLS 1.2 at
least, ALPN h2 (gRPC) or http/1.1 (streams), and a client certificate
chained to the cluster CA, required unless callers with bearer tokens are
served too (agent/stream_proxy.py accepts only the API server's certificate,
and checks the tokens of the others with agent/webhook_auth.py). The files
are followed: once serving_certificate.py has renewed them, the next
handshake gets the new certificate.
"""

from __future__ import annotations

import ssl
import tempfile
from pathlib import Path

from machinery.atomicfile import write_private
from machinery.certfollow import ServingCertificate, follow

CERT_FILE = "serving.crt"
KEY_FILE = "serving.key"


class NoServingCertificate(Exception):
    """The agent has no serving certificate (it did not join with a CSR)."""


def save(root: Path, cert_pem: bytes, key_pem: bytes) -> None:
    """The key through the credential writer (0600 from creation, a fresh
    exclusive temporary, fsync), then the certificate."""
    root.mkdir(parents=True, exist_ok=True)
    write_private(root / KEY_FILE, key_pem)
    write_private(root / CERT_FILE, cert_pem, mode=0o644)


def have(root: Path) -> bool:
    return (root / CERT_FILE).exists() and (root / KEY_FILE).exists()


def server_context(root: Path, ca_pem: bytes, token_callers: bool = False) -> ssl.SSLContext:
    """The endpoint's TLS; with `token_callers` a client certificate is
    optional (callers without one bring a bearer token instead), though one
    that is presented must still chain to the cluster CA."""
    if not have(root):
        raise NoServingCertificate(
            f"no {CERT_FILE}/{KEY_FILE} in {root}: the agent endpoint serves TLS only, "
            "with a certificate issued at join (join again with a join token)"
        )
    ca = ca_pem.decode()

    def build(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory(prefix="skiff-serving-") as tmp:  # ssl reads files
            crt, key = Path(tmp) / CERT_FILE, Path(tmp) / KEY_FILE
            write_private(key, key_pem)
            crt.write_bytes(cert_pem)
            context.load_cert_chain(crt, key)
        context.load_verify_locations(cadata=ca)
        context.verify_mode = ssl.CERT_OPTIONAL if token_callers else ssl.CERT_REQUIRED
        context.set_alpn_protocols(["h2", "http/1.1"])
        return context

    # The files are followed: a renewed pair (serving_certificate.py) is served
    # from the next handshake on.
    cert, key = (root / CERT_FILE).read_bytes(), (root / KEY_FILE).read_bytes()
    return follow(ServingCertificate(str(root), cert, key, "serving"), build)
