"""Issue 32: a node proves who it is with an expiring client certificate from
the CertificateSigningRequest API, over skiff's gRPC API (which the front
door relays, so the certificate reaches the servicers through
controlplane/apiserver/relayedpeers.py), and renews it with itself.

Against a real `skiff controlplane` with its controllers (csrapproving
approves a node asking for itself, csrsigning signs). The agent's
certificate manager (agent/client_certificate.py) runs its steps here one
at a time.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509

from agent.client_certificate import CertificateManager, request_certificate
from controlplane.api.bootstraptoken import TOKEN_RE
from controlplane.client import errors
from controlplane.client.agents import agent_csr
from controlplane.client.apiclient import GrpcApiClient, connect, join_node
from controlplane.client.config import ClientConfig, load_config
from tests.harness.controlplane import ControlPlane
from tests.harness.wait import wait_for

pytestmark = pytest.mark.slow

NODE = "certnode"


@pytest.fixture(scope="module")
def cp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    plane = ControlPlane(tmp_path_factory.mktemp("certs") / "cp", ["--store", "sqlite"],
                         components=True).start()  # fmt: skip
    try:
        yield plane
    finally:
        plane.close()


def joined(cp: ControlPlane, node: str) -> ClientConfig:
    token = (cp.data_dir / "join-token").read_text().strip()
    ca = (cp.data_dir / "pki" / "ca.crt").read_bytes()
    csr, _ = agent_csr(node, ["127.0.0.1"])
    return join_node(f"127.0.0.1:{cp.port}", ca, token, node, csr)[0]


def serial(cfg: ClientConfig) -> int:
    return x509.load_pem_x509_certificate(cfg.cert_pem).serial_number


def test_a_node_gets_rotates_and_loses_its_client_certificate(
    cp: ControlPlane, tmp_path: Path
) -> None:
    admin = cp.client()
    creds = joined(cp, NODE)
    api: GrpcApiClient = connect(creds)
    stop = threading.Event()
    try:
        manager = CertificateManager(api, NODE, tmp_path / "node.conf", stop, seconds=3600)
        assert manager.due() == 0  # no certificate yet: ask at once
        manager.renew()
        first = api.config
        assert first.cert_pem and first.key_pem
        cert = x509.load_pem_x509_certificate(first.cert_pem)
        assert cert.subject.rfc4514_string() == f"CN=system:node:{NODE},O=system:nodes"
        life = cert.not_valid_after_utc - cert.not_valid_before_utc
        assert (
            life.total_seconds() <= 3600 + 300
        )  # expirationSeconds honoured (the signer's backdating aside)
        assert 0.6 * 3600 < manager.due() <= 0.9 * 3600  # renewed at 70-90% of its life
        saved = load_config(tmp_path / "node.conf")
        assert saved.cert_pem == first.cert_pem and saved.key_pem == first.key_pem
        assert api.whoami()["node"] == NODE

        # The node's token stops working (its credential id replaced), the
        # certificate does not: the client is using the certificate.
        record = admin.get("Secret", f"node-credential-{NODE}", "kube-system")
        record["data"]["id"] = base64.b64encode(b"replaced").decode()
        admin.update("Secret", record)
        token_only = connect(creds)
        try:
            wait_for(lambda: _refused(token_only), timeout=10, interval=0.2,
                     message="the old token refused")  # fmt: skip
        finally:
            token_only.close()
        assert api.whoami()["node"] == NODE

        # Renewed with itself (selfnodeclient): a new certificate, in use.
        manager.renew()
        assert serial(api.config) != serial(first)
        assert api.whoami()["node"] == NODE
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}}
        api.create("Node", node)

        # Deleting the Node ends its certificates, as it ends its token.
        admin.delete("Node", NODE)
        wait_for(lambda: _refused(api), timeout=10, interval=0.2,
                 message="the deleted node's certificate refused")  # fmt: skip

        # The name joins again: its new credential gets a certificate that
        # works (certificates signed well before the new join stay dead:
        # tests/unit/controlplane/apiserver/test_node_credential_records.py).
        again = connect(joined(cp, NODE))
        try:
            CertificateManager(again, NODE, tmp_path / "again.conf", stop, seconds=3600).renew()
            assert again.config.cert_pem and again.whoami()["node"] == NODE
        finally:
            again.close()
    finally:
        stop.set()
        api.close()


def _refused(client: GrpcApiClient) -> bool:
    try:
        client.whoami()
    except errors.Unauthenticated:
        return True
    return False


def test_a_bootstrap_token_authenticates_as_kubernetes_bootstrap_identity(
    cp: ControlPlane,
) -> None:
    """The join token is a bootstrap token: as a bearer token it is
    system:bootstrap:<id> in system:bootstrappers (Kubernetes' bootstrap
    authenticator), may ask for a new node's client certificate, which is
    auto-approved (nodeclient) and signed, and stops working with its Secret.
    (Such a certificate authenticates once its node has joined: skiff keeps
    a node's credentials on record, so that deleting the Node ends them.)"""
    admin = cp.client()
    ca = (cp.data_dir / "pki" / "ca.crt").read_bytes()
    token = admin_token_create(cp)
    boot = connect(ClientConfig(f"127.0.0.1:{cp.port}", ca, token))
    try:
        who = boot.whoami()
        assert who["user"] == f"system:bootstrap:{token.split('.')[0]}" and not who["admin"]
        stop = threading.Event()
        cert, key = request_certificate(boot, "bootnode", stop, seconds=3600, timeout=60)
        issued = x509.load_pem_x509_certificate(cert)
        assert issued.subject.rfc4514_string() == "CN=system:node:bootnode,O=system:nodes"
        assert key
        admin.delete("Secret", f"bootstrap-token-{token.split('.')[0]}", "kube-system")
        wait_for(lambda: _refused(boot), timeout=10, interval=0.2,
                 message="the deleted bootstrap token refused")  # fmt: skip
    finally:
        boot.close()


def admin_token_create(cp: ControlPlane) -> str:
    """A fresh bootstrap token, as `skiff token create` makes one."""
    env = dict(os.environ, SKIFF_CONFIG=str(cp.data_dir / "admin.conf"))
    done = subprocess.run([sys.executable, "-m", "skiff", "token", "create", "--ttl", "1h"],
                          capture_output=True, text=True, check=True, timeout=60, env=env)  # fmt: skip
    return next(w for w in done.stdout.split() if TOKEN_RE.match(w))
