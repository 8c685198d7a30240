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


def _csr(node: str, *names: x509.GeneralName) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    return (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, node)]))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(node), *names]), critical=False)
        .sign(key, hashes.SHA256())
        .public_bytes(serialization.Encoding.PEM)
    )


@pytest.mark.parametrize(
    ("asked", "problem"),
    [
        (x509.DNSName("skiff-apiserver"), "names only the node"),
        (x509.DNSName("kubernetes.default.svc"), "names only the node"),
        (x509.DNSName("*.example.com"), "names only the node"),
        (x509.DNSName("other-node"), "names only the node"),
        (x509.IPAddress(ipaddress.ip_address("10.43.0.1")), "in the Service range"),
        (x509.IPAddress(ipaddress.ip_address("127.0.0.1")), "loopback"),
        (x509.IPAddress(ipaddress.ip_address("169.254.169.254")), "not the address of one host"),
        (x509.IPAddress(ipaddress.ip_address("10.9.9.9")), 'an address of node "taken"'),
        (x509.IPAddress(ipaddress.ip_address("10.244.3.7")), 'in the pod range of node "taken"'),
    ],
)
def test_a_serving_certificate_names_only_the_node_and_its_own_addresses(
    cluster: Cluster, asked: x509.GeneralName, problem: str
) -> None:
    """The attack: join asked the CA for any name or address (the API server's,
    the kubernetes Service IP, wildcards, other nodes') and got it for 10 years."""
    assert cluster.server.joins is not None
    cluster.client().create("Node", {
        "metadata": {"name": "taken"}, "spec": {"podCIDR": "10.244.3.0/24"},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.9.9.9"}]},
    })  # fmt: skip
    token = cluster.server.joins.create(datetime.timedelta(hours=1))
    with pytest.raises(Invalid, match=f"serving_csr_pem: .*{problem}"):
        join_node(cluster.address, cluster.pki.ca_pem, token, "n9", _csr("n9", asked))


def test_the_serving_certificate_lasts_a_year(cluster: Cluster) -> None:
    assert cluster.server.joins is not None
    token = cluster.server.joins.create(datetime.timedelta(hours=1))
    csr, _ = agent_csr("n10", ["10.0.0.10", "127.0.0.1"])  # loopback: left out by the agent
    _, cert_pem = join_node(cluster.address, cluster.pki.ca_pem, token, "n10", csr)
    cert = x509.load_pem_x509_certificate(cert_pem)
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert datetime.timedelta(days=364) < lifetime <= datetime.timedelta(days=366)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("10.0.0.10")]


@pytest.mark.parametrize("name", ["skiff-apiserver", "kubernetes.default.svc", "localhost",
                                  "web.prod.svc.cluster.local"])  # fmt: skip
def test_a_node_may_not_take_the_api_servers_or_a_services_name(
    cluster: Cluster, name: str
) -> None:
    assert cluster.server.joins is not None
    token = cluster.server.joins.create(datetime.timedelta(hours=1))
    with pytest.raises(Invalid, match=r"node_name: .* is a name of the API server or of a Service"):
        join_node(cluster.address, cluster.pki.ca_pem, token, name, agent_csr(name, [])[0])
