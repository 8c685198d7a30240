"""Which kubelet-serving CSRs the csrapproving controller approves (issue 34):
from the node itself, for names that are its Node's addresses and no other
Node's. The rule alone; tests/integration/controlplane/
test_node_serving_certificates.py runs it in a control plane."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from controlplane.controllers.csrapproving import serving_verdict
from machinery import x509read
from machinery.x509read import Names


def request(node: str, dns: list[str], ips: list[str]) -> Names:
    names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    subject = x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
        x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{node}"),
    ])  # fmt: skip
    signed = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(subject)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ec.generate_private_key(ec.SECP256R1()), hashes.SHA256())
    )
    return x509read.request_names(signed.public_bytes(serialization.Encoding.PEM))


def node(name: str, *addresses: tuple[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "status": {"addresses": [{"type": t, "address": a} for t, a in addresses]}}  # fmt: skip


NODES = {
    "n1": node("n1", ("InternalIP", "10.0.0.5"), ("Hostname", "n1"),
               ("ExternalDNS", "n1.example.com"), ("ExternalIP", "203.0.113.7")),
    "n2": node("n2", ("InternalIP", "10.0.0.6"), ("Hostname", "n2")),
}  # fmt: skip
BY_NODE = {"username": "system:node:n1", "groups": ["system:nodes", "system:authenticated"]}


def verdict(spec: dict[str, Any], req: Names) -> str | None:
    return serving_verdict(spec, req, NODES.get, lambda: NODES.values())


def test_the_node_asking_for_its_own_addresses_is_approved() -> None:
    req = request("n1", ["n1", "n1.example.com"], ["10.0.0.5", "203.0.113.7"])
    assert verdict(BY_NODE, req) == ""


@pytest.mark.parametrize(
    ("spec", "req", "reason"),
    [
        ({"username": "system:node:n2", "groups": ["system:nodes"]},
         request("n1", ["n1"], ["10.0.0.5"]), "not the node 'system:node:n1' itself"),
        ({"username": "system:node:n1", "groups": ["system:authenticated"]},
         request("n1", ["n1"], []), "not the node"),
        ({"username": "alice", "groups": ["system:masters"]},
         request("n1", ["n1"], []), "not the node"),
        (BY_NODE, request("n1", ["n1", "kubernetes.default"], []),
         "DNS name 'kubernetes.default' is not an address of Node 'n1'"),
        (BY_NODE, request("n1", ["n1"], ["10.0.0.6"]),
         "IP address 10.0.0.6 is not an address of Node 'n1'"),
    ],
)  # fmt: skip
def test_other_names_or_requesters_stay_pending(
    spec: dict[str, Any], req: Names, reason: str
) -> None:
    found = verdict(spec, req)
    assert found and reason in found, found


def test_an_address_another_node_also_has_is_refused() -> None:
    """A node writes its own status: claiming n2's address gets it no certificate."""
    claimed = dict(NODES)
    claimed["n1"] = node("n1", ("InternalIP", "10.0.0.5"), ("InternalIP", "10.0.0.6"))
    req = request("n1", ["n1"], ["10.0.0.6"])
    found = serving_verdict(BY_NODE, req, claimed.get, lambda: claimed.values())
    assert found == "IP address 10.0.0.6 is also an address of Node 'n2'"


def test_a_node_not_seen_yet_is_looked_at_again() -> None:
    assert serving_verdict({"username": "system:node:n9", "groups": ["system:nodes"]},
                           request("n9", ["n9"], []), NODES.get) is None  # fmt: skip
