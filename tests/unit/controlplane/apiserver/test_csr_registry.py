"""CertificateSigningRequests in the registry: the requester recorded at
create, the update strategies (spec never changes; only the approval writes
Approved/Denied; only the status writes the certificate, once), the kind's
validation messages, the signers' subject rules, the signer's certificate,
and the identity a client certificate proves."""

from __future__ import annotations

import base64
import datetime
import ssl
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from controlplane.api import csr
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.authn import certificate_identity
from controlplane.apiserver.certificates import requester
from controlplane.apiserver.codec import decode
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import Invalid
from controlplane.controllers.csrsigning import ChildSigner
from controlplane.storage.sqlite import SqliteStore
from machinery import x509read

KIND = "CertificateSigningRequest"


def request_pem(cn: str, orgs: tuple[str, ...] = (), ips: tuple[str, ...] = ()) -> bytes:
    import ipaddress

    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    names += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(names))
    if ips:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(i)) for i in ips]),
            critical=False,
        )
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def body(name: str = "r", signer: str = csr.KUBE_APISERVER_CLIENT) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "request": base64.b64encode(request_pem("alice")).decode(),
            "signerName": signer,
            "usages": ["client auth"],
            "username": "forged",
            "groups": ["system:masters"],
        },
        "status": {"certificate": "Zm9v"},
    }


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    reg = Registry(SqliteStore(tmp_path / "state.db"))
    reg.requesters[KIND] = requester
    return reg


def test_the_requester_is_who_created_it(registry: Registry) -> None:
    who = Identity("bob", admin=True, groups=("dev", "system:authenticated"), uid="u-1",
                   extra=(("scopes", ("a", "b")),))  # fmt: skip
    made = decode(registry.create(KIND, body(), identity=who)[0])
    spec = made["spec"]
    assert (spec["username"], spec["groups"], spec["uid"]) == (
        "bob", ["dev", "system:authenticated"], "u-1")  # fmt: skip
    assert spec["extra"] == {"scopes": ["a", "b"]}
    assert made["status"] == {}


def test_only_the_approval_approves_and_only_the_status_issues(registry: Registry) -> None:
    registry.create(KIND, body())
    stored = decode(registry.get(KIND, "r")[0])
    # The status may not add Approved.
    stored["status"] = {"conditions": [{"type": "Approved", "status": "True"}]}
    with pytest.raises(Invalid, match='updates may not add a condition of type "Approved"'):
        registry.update(KIND, stored, "status")
    # The approval may; it fills in the timestamps and never takes a certificate.
    stored["status"]["certificate"] = "Zm9v"
    approved = decode(registry.update(KIND, stored, "approval")[0])
    (cond,) = approved["status"]["conditions"]
    assert cond["lastUpdateTime"] and cond["lastTransitionTime"]
    assert "certificate" not in approved["status"]
    # The spec never changes, whatever the update says.
    approved["spec"]["signerName"] = "example.com/other"
    assert decode(registry.update(KIND, approved)[0])["spec"]["signerName"] == (
        csr.KUBE_APISERVER_CLIENT
    )
    # Once approved, Approved may not be removed, nor Denied added.
    approved = decode(registry.get(KIND, "r")[0])
    approved["status"]["conditions"] = []
    with pytest.raises(Invalid, match='updates may not remove a condition of type "Approved"'):
        registry.update(KIND, approved, "approval")
    approved["status"]["conditions"] = [cond, {"type": "Denied", "status": "True"}]
    with pytest.raises(Invalid, match="Approved and Denied conditions are mutually exclusive"):
        registry.update(KIND, approved, "approval")
    # The certificate is set once.
    pem = self_signed()
    issued = decode(registry.get(KIND, "r")[0])
    issued["status"]["certificate"] = base64.b64encode(pem).decode()
    registry.update(KIND, issued, "status")
    issued["status"]["certificate"] = base64.b64encode(self_signed()).decode()
    with pytest.raises(Invalid, match="updates may not modify existing certificate content"):
        registry.update(KIND, issued, "status")


def self_signed() -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "x")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))  # fmt: skip
    return cert.public_bytes(serialization.Encoding.PEM)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"signerName": "kubernetes.io/legacy-unknown"},
         'spec.signerName: Invalid value: "kubernetes.io/legacy-unknown": the legacy '
         "signerName is not allowed via this API version"),
        ({"signerName": ""}, "spec.signerName: Required value"),
        ({"signerName": "nodots/x"},
         'spec.signerName: Invalid value: "nodots": should be a domain with at least two '
         "segments separated by dots"),
        ({"request": base64.b64encode(b"junk").decode()},
         'spec.request: Invalid value: "<request data>": PEM block type must be '
         "CERTIFICATE REQUEST"),
        ({"expirationSeconds": 10},
         "spec.expirationSeconds: Invalid value: 10: may not specify a duration less than 600 "
         "seconds (10 minutes)"),
    ],
)  # fmt: skip
def test_validation_messages(registry: Registry, change: dict[str, Any], message: str) -> None:
    bad = body()
    bad["spec"].update(change)
    with pytest.raises(Invalid) as refused:
        registry.create(KIND, bad)
    assert message in str(refused.value)


def test_the_kubelet_signers_rules() -> None:
    client = x509read.request_names(request_pem("system:node:n1", ("system:nodes",)))
    usages = ["digital signature", "client auth"]
    assert csr.signer_problem(csr.KUBE_APISERVER_CLIENT_KUBELET, client, usages) == ""
    assert csr.signer_problem(csr.KUBE_APISERVER_CLIENT_KUBELET, client, ["client auth"]) == (
        "usages did not match [client auth digital signature key encipherment]"
    )
    other = x509read.request_names(request_pem("alice", ("system:nodes",)))
    assert csr.signer_problem(csr.KUBE_APISERVER_CLIENT_KUBELET, other, usages) == (
        "subject common name does not begin with system:node:"
    )
    with_ip = x509read.request_names(request_pem("system:node:n1", ("system:nodes",),
                                                 ("10.0.0.1",)))  # fmt: skip
    assert csr.signer_problem(csr.KUBE_APISERVER_CLIENT_KUBELET, with_ip, usages) == (
        "IP subjectAltNames are not allowed"
    )
    serving = ["digital signature", "server auth"]
    assert csr.signer_problem(csr.KUBELET_SERVING, with_ip, serving) == ""
    assert csr.signer_problem(csr.KUBELET_SERVING, client, serving) == (
        "DNS or IP subjectAltName is required"
    )
    assert csr.signer_problem(csr.KUBE_APISERVER_CLIENT, client, ["server auth"]) == (
        "invalid usage for client certificate: server auth"
    )


def test_the_signed_certificate_is_bounded(tmp_path: Path) -> None:
    ca_key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ca")])
    now = datetime.datetime.now(datetime.UTC)
    ca = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
          .public_key(ca_key.public_key()).serial_number(1).not_valid_before(now)
          .not_valid_after(now + datetime.timedelta(days=30))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))  # fmt: skip
    key_pem = ca_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption())  # fmt: skip
    # the controller's signer: each certificate made in a child (csrsigner.sign)
    authority = ChildSigner(ca.public_bytes(serialization.Encoding.PEM), key_pem,
                            datetime.timedelta(days=365))  # fmt: skip
    pem = request_pem("system:node:n1", ("system:nodes",))
    request = x509.load_pem_x509_csr(pem)
    cert = x509.load_pem_x509_certificate(
        authority.sign(pem, ["digital signature", "client auth"], 3600, now)
    )
    assert cert.not_valid_after_utc - now <= datetime.timedelta(hours=1)
    assert cert.subject == request.subject and cert.issuer == ca.subject
    # Never past the CA's own end.
    long = x509.load_pem_x509_certificate(authority.sign(pem, ["client auth"], None, now))
    assert long.not_valid_after_utc <= ca.not_valid_after_utc
    assert not any(isinstance(e.value, x509.KeyUsage) for e in long.extensions)


def _peer(cn: str, orgs: tuple[str, ...], not_after: str) -> dict[str, Any]:
    subject = [(("commonName", cn),), *((("organizationName", o),) for o in orgs)]
    return {"subject": tuple(subject), "notAfter": not_after}


def test_a_client_certificate_names_its_user_and_groups() -> None:
    later = "Jan  1 00:00:00 2099 GMT"
    who = certificate_identity(_peer("alice", ("dev", "qa"), later))
    assert who == Identity("alice", groups=("dev", "qa", "system:authenticated"))
    node = certificate_identity(_peer("system:node:n1", ("system:nodes",), later))
    assert node is not None and node.node == "n1" and not node.admin
    # A system:node: name outside system:nodes is no node.
    assert certificate_identity(_peer("system:node:n1", (), later)).node is None  # type: ignore[union-attr]
    assert certificate_identity(_peer("root", ("system:masters",), later)).admin  # type: ignore[union-attr]
    expired = ssl.cert_time_to_seconds(later) + 1
    assert certificate_identity(_peer("alice", (), later), now=expired) is None
    assert certificate_identity(_peer("", ("dev",), later)) is None
    assert certificate_identity(None) is None
