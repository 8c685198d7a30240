"""Issue 34: an agent renews its endpoint's serving certificate as the kubelet
with serverTLSBootstrap, against a real `skiff controlplane` with its
controllers: csrapproving approves the node's kubernetes.io/kubelet-serving
request for its own addresses, csrsigning signs it with the cluster CA, and
the endpoint's TLS context, built before, serves the new certificate at the
next handshake. The agent's manager (agent/serving_certificate.py) runs its
renewal step here."""

from __future__ import annotations

import base64
import ipaddress
import socket
import ssl
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509

from agent import serving_tls
from agent.serving_certificate import ServingCertificateManager
from controlplane.client.agents import agent_csr
from controlplane.client.apiclient import connect, join_node
from tests.harness.controlplane import ControlPlane

pytestmark = pytest.mark.slow

NODE = "servenode"
ADDRESSES = [{"type": "InternalIP", "address": "10.99.0.5"}, {"type": "Hostname", "address": NODE}]


@pytest.fixture(scope="module")
def cp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    plane = ControlPlane(tmp_path_factory.mktemp("serving") / "cp", components=True).start()
    try:
        yield plane
    finally:
        plane.close()


def served(context: ssl.SSLContext, ca_pem: bytes) -> x509.Certificate:
    """The certificate a handshake with `context` presents."""
    server_end, client_end = socket.socketpair()

    def serve() -> None:
        try:
            with context.wrap_socket(server_end, server_side=True) as tls:
                tls.recv(1)
        except (ssl.SSLError, OSError):
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client = ssl.create_default_context(cadata=ca_pem.decode())
    client.check_hostname = False
    client_end.settimeout(10)
    try:
        with client.wrap_socket(client_end) as tls:
            der = tls.getpeercert(binary_form=True)
            assert der is not None
            return x509.load_der_x509_certificate(der)
    finally:
        thread.join(10)


def test_the_node_renews_its_serving_certificate(cp: ControlPlane, tmp_path: Path) -> None:
    token = (cp.data_dir / "join-token").read_text().strip()
    ca = (cp.data_dir / "pki" / "ca.crt").read_bytes()
    csr_pem, key_pem = agent_csr(NODE, ["10.99.0.5"])
    creds, cert_pem = join_node(f"127.0.0.1:{cp.port}", ca, token, NODE, csr_pem)
    root = tmp_path / "agent"
    serving_tls.save(root, cert_pem, key_pem)
    context = serving_tls.server_context(root, ca, token_callers=True)
    first = served(context, ca)
    api = connect(creds)
    stop = threading.Event()
    try:
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}}
        api.create("Node", node)
        # A patch, as the agent writes its status: the node lifecycle controller
        # may have written the new Node already (an update would conflict).
        api.patch("Node", NODE, {"status": {"addresses": ADDRESSES}}, subresource="status")
        manager = ServingCertificateManager(api, NODE, root, lambda: ADDRESSES, stop, 3600,
                                            issue_timeout=60)  # fmt: skip

        manager.renew()  # waits for approval and signature

        (request,) = [c for c in cp.client().list("CertificateSigningRequest").items
                      if c["spec"]["signerName"] == "kubernetes.io/kubelet-serving"]  # fmt: skip
        assert request["spec"]["username"] == f"system:node:{NODE}"
        (approved,) = [c for c in request["status"]["conditions"] if c["type"] == "Approved"]
        assert approved["reason"] == "AutoApproved", approved
        assert "Node's addresses" in approved["message"]
        renewed = x509.load_pem_x509_certificate((root / "serving.crt").read_bytes())
        assert renewed.subject.rfc4514_string() == f"CN=system:node:{NODE},O=system:nodes"
        assert renewed.issuer == x509.load_pem_x509_certificate(ca).subject
        sans = renewed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert sans.get_values_for_type(x509.DNSName) == [NODE]
        assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("10.99.0.5")]
        life = renewed.not_valid_after_utc - renewed.not_valid_before_utc
        assert life.total_seconds() <= 3600 + 300  # expirationSeconds (backdating aside)
        assert base64.b64decode(request["status"]["certificate"]).strip() == (
            (root / "serving.crt").read_bytes().strip()
        )
        assert stat.S_IMODE((root / "serving.key").stat().st_mode) == 0o600
        # The context built before the renewal serves the new certificate.
        now = served(context, ca)
        assert now.serial_number == renewed.serial_number != first.serial_number
    finally:
        stop.set()
        api.close()
