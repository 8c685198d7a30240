"""The agent endpoint's serving certificate is renewed as the kubelet's with
serverTLSBootstrap (issue 34): a kubernetes.io/kubelet-serving CSR for
system:node:NAME in system:nodes with the node's names and addresses, at
70-90% of the current one's lifetime, the key kept 0600, and the endpoint's
TLS context serving the new certificate from the next handshake on.

The CSR API here is a stand-in that signs with a test CA what it is sent
(the control plane's approver and signer are tested against a real control
plane in tests/integration/controlplane/test_node_serving_certificates.py)."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import math
import socket
import ssl
import stat
import threading
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from prometheus_client.parser import text_string_to_metric_families

from agent import serving_tls
from agent.metrics import AgentMetrics
from agent.serving_certificate import ServingCertificateManager
from proto.agent.v1 import agent_pb2 as pb

NODE = "n1"
ADDRESSES = [{"type": "InternalIP", "address": "10.0.0.5"},
             {"type": "InternalIP", "address": "127.0.0.1"},
             {"type": "Hostname", "address": "n1.example"}]  # fmt: skip


class SigningCA:
    def __init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-ca")])
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=10))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )  # fmt: skip
        self.pem = self.cert.public_bytes(serialization.Encoding.PEM)

    def sign(self, csr: x509.CertificateSigningRequest, start: datetime.datetime,
             seconds: int) -> bytes:  # fmt: skip
        sans = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        cert = (
            x509.CertificateBuilder().subject_name(csr.subject).issuer_name(self.cert.subject)
            .public_key(csr.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(start + datetime.timedelta(seconds=seconds))
            .add_extension(sans, critical=False)
            .sign(self.key, hashes.SHA256())
        )  # fmt: skip
        return cert.public_bytes(serialization.Encoding.PEM)


class SigningApi:
    """create/get of CertificateSigningRequests, each signed at once."""

    def __init__(self, ca: SigningCA) -> None:
        self.ca = ca
        self.made: list[dict[str, Any]] = []

    def create(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        assert kind == "CertificateSigningRequest"
        csr = x509.load_pem_x509_csr(base64.b64decode(obj["spec"]["request"]))
        now = datetime.datetime.now(datetime.UTC)
        seconds = obj["spec"].get("expirationSeconds") or 365 * 86400
        cert = self.ca.sign(csr, now - datetime.timedelta(seconds=1), seconds)
        made = {**obj, "metadata": {"name": f"csr-{len(self.made)}"},
                "status": {"certificate": base64.b64encode(cert).decode()}}  # fmt: skip
        self.made.append(made)
        return made

    def get(self, kind: str, name: str) -> dict[str, Any]:
        return next(m for m in self.made if m["metadata"]["name"] == name)


def first_certificate(ca: SigningCA, root: Path) -> None:
    """A serving certificate of 1000 s, 950 s of it gone: due for renewal."""
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{NODE}")]))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(NODE)]), critical=False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    start = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=950)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())  # fmt: skip
    serving_tls.save(root, ca.sign(csr, start, 1000), key_pem)


def served_serial(context: ssl.SSLContext, ca_pem: bytes) -> int:
    """The serial of the certificate a TLS handshake with `context` presents
    (over a socket pair: the unit layer listens on nothing)."""
    server_end, client_end = socket.socketpair()
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            with context.wrap_socket(server_end, server_side=True) as tls:
                tls.recv(1)
        except (ssl.SSLError, OSError) as err:
            errors.append(err)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client = ssl.create_default_context(cadata=ca_pem.decode())
    client.check_hostname = False
    client_end.settimeout(5)
    try:
        with client.wrap_socket(client_end) as tls:
            der = tls.getpeercert(binary_form=True)
            assert der is not None
            return x509.load_der_x509_certificate(der).serial_number
    finally:
        thread.join(5)


def test_renewed_at_70_to_90_percent_and_served_at_the_next_handshake(tmp_path: Path) -> None:
    ca = SigningCA()
    root = tmp_path / "agent"
    first_certificate(ca, root)
    context = serving_tls.server_context(root, ca.pem, token_callers=True)
    before = served_serial(context, ca.pem)
    api = SigningApi(ca)
    manager = ServingCertificateManager(api, NODE, root, lambda: ADDRESSES, threading.Event(),
                                        seconds=3600)  # fmt: skip
    assert manager.due() == 0  # past 90% of its life

    manager.renew()

    (request,) = api.made
    spec = request["spec"]
    assert spec["signerName"] == "kubernetes.io/kubelet-serving"
    assert spec["usages"] == ["digital signature", "server auth"]
    assert spec["expirationSeconds"] == 3600
    csr = x509.load_pem_x509_csr(base64.b64decode(spec["request"]))
    assert csr.subject.rfc4514_string() == f"CN=system:node:{NODE},O=system:nodes"
    sans = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == [NODE, "n1.example"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("10.0.0.5")]
    assert stat.S_IMODE((root / "serving.key").stat().st_mode) == 0o600
    renewed = x509.load_pem_x509_certificate((root / "serving.crt").read_bytes())
    assert served_serial(context, ca.pem) == renewed.serial_number != before
    assert 0.69 * 3600 <= manager.due() <= 0.9 * 3600


def test_without_a_readable_certificate_it_asks_at_once(tmp_path: Path) -> None:
    manager = ServingCertificateManager(SigningApi(SigningCA()), NODE, tmp_path, lambda: [],
                                        threading.Event())  # fmt: skip
    assert manager.due() == 0
    (tmp_path / "serving.crt").write_bytes(b"not a certificate")
    assert manager.due() == 0


def test_the_serving_certificate_ttl_is_a_metric(tmp_path: Path) -> None:
    """kubelet_certificate_manager_server_ttl_seconds: seconds left, read at
    each scrape (so a renewal shows), +Inf without a readable certificate."""
    ca = SigningCA()
    root = tmp_path / "agent"
    first_certificate(ca, root)  # 50 s left
    found = AgentMetrics(NODE, list, list, pb.StatsResponse, lambda uid: None,
                         (root / "serving.crt").read_bytes)  # fmt: skip

    def ttl() -> float:
        text = found.pages()["/metrics"]()[1].decode()
        (family,) = [f for f in text_string_to_metric_families(text)
                     if f.name == "kubelet_certificate_manager_server_ttl_seconds"]  # fmt: skip
        return float(family.samples[0].value)

    assert 0 < ttl() <= 50
    ServingCertificateManager(SigningApi(ca), NODE, root, lambda: ADDRESSES, threading.Event(),
                              seconds=3600).renew()  # fmt: skip
    assert 3500 < ttl() <= 3600
    (root / "serving.crt").unlink()
    assert ttl() == math.inf
