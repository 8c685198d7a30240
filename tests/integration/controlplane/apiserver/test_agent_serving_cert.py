"""The agent's serving certificate comes with the join (issue 16): issued by
the cluster CA for the node's name (what the API server checks when it
dials the agent) and the addresses the agent asked for; a bad request is
refused naming the field; an existing node's name gets nothing."""

from __future__ import annotations

import datetime
import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from controlplane.client.agents import agent_csr
from controlplane.client.apiclient import connect, join_node
from controlplane.client.errors import Forbidden, Invalid
from tests.harness.apiserver import Cluster


def test_join_issues_the_agent_serving_certificate(cluster: Cluster) -> None:
    assert cluster.server.joins is not None
    token = cluster.server.joins.create(datetime.timedelta(hours=1))
    csr, _ = agent_csr("n7", ["10.0.0.7"])
    config, cert_pem = join_node(cluster.address, cluster.pki.ca_pem, token, "n7", csr)
    cert = x509.load_pem_x509_certificate(cert_pem)
    ca = x509.load_pem_x509_certificate(cluster.pki.ca_pem)
    cert.verify_directly_issued_by(ca)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["n7"]
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("10.0.0.7")]
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]  # not a client cert
    with connect(config) as n7:
        n7.create("Node", {"metadata": {"name": "n7"}})
    with pytest.raises(Forbidden):  # no second certificate for a running node's name
        join_node(cluster.address, cluster.pki.ca_pem, token, "n7", csr)


def test_bad_certificate_requests_are_refused(cluster: Cluster) -> None:
    assert cluster.server.joins is not None
    token = cluster.server.joins.create(datetime.timedelta(hours=1))
    with pytest.raises(Invalid, match="serving_csr_pem: not a PEM certificate request"):
        join_node(cluster.address, cluster.pki.ca_pem, token, "n8", b"junk")
    many = [f"10.0.1.{i}" for i in range(20)]
    with pytest.raises(Invalid, match="serving_csr_pem: more than 16 names"):
        join_node(cluster.address, cluster.pki.ca_pem, token, "n8", agent_csr("n8", many)[0])
    key = ec.generate_private_key(ec.SECP384R1())
    weak = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "n8")]))
        .sign(key, hashes.SHA256())
        .public_bytes(serialization.Encoding.PEM)
    )
    with pytest.raises(Invalid, match="serving_csr_pem: the key must be ECDSA P-256"):
        join_node(cluster.address, cluster.pki.ca_pem, token, "n8", weak)
