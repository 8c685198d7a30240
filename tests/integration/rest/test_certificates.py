"""CertificateSigningRequests (certificates.k8s.io/v1) through kubectl 1.33 and
the official Python client against a real control plane (API server and
controllers, with the csrsigning controller signing with the cluster CA):
create, the columns, `kubectl certificate approve|deny`, the signer's
certificate, and that certificate authenticating as its subject over TLS;
validation, the signers' subject rules, and the approve/sign/subject
admission with Kubernetes' messages."""

from __future__ import annotations

import base64
import datetime
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.harness.kubectl import NEWEST
from tests.harness.wait import wait_for
from tests.integration.rest.conftest import Cluster

KUBECTL = NEWEST
CLIENT = "kubernetes.io/kube-apiserver-client"
KUBELET_CLIENT = "kubernetes.io/kube-apiserver-client-kubelet"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl 1.33 is not installed"),
]


def run(cluster: Cluster, *args: str, stdin: str | None = None,
        kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    env = cluster.env(**({"KUBECONFIG": str(kubeconfig)} if kubeconfig else {}))
    return subprocess.run([str(KUBECTL), *args], input=stdin, capture_output=True, text=True,
                          timeout=60, env=env)  # fmt: skip


def ok(cluster: Cluster, *args: str, stdin: str | None = None) -> str:
    done = run(cluster, *args, stdin=stdin)
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
    return done.stdout


def key_and_request(cn: str, orgs: tuple[str, ...] = (), dns: tuple[str, ...] = ()) -> tuple[
    ec.EllipticCurvePrivateKey, bytes
]:  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    names += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(names))
    if dns:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(d) for d in dns]), critical=False
        )
    request = builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
    return key, request


def self_signed(cn: str) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))  # fmt: skip
    return cert.public_bytes(serialization.Encoding.PEM)


def manifest(name: str, request: bytes, signer: str = CLIENT,
             usages: tuple[str, ...] = ("client auth", "digital signature"),
             expiration: int | None = 3600, extra: str = "") -> str:  # fmt: skip
    lines = [
        "apiVersion: certificates.k8s.io/v1",
        "kind: CertificateSigningRequest",
        f"metadata: {{name: {name}}}",
        "spec:",
        f"  request: {base64.b64encode(request).decode()}",
        f"  signerName: {signer}",
        f"  usages: {json.dumps(list(usages))}",
    ]
    if expiration is not None:
        lines.append(f"  expirationSeconds: {expiration}")
    return "\n".join(lines) + "\n" + extra


def csr(cluster: Cluster, name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(ok(cluster, "get", "csr", name, "-o", "json"))
    return found


def issued(cluster: Cluster, name: str) -> x509.Certificate:
    wait_for(lambda: (csr(cluster, name).get("status") or {}).get("certificate"), 30,
             message=f"the signer's certificate for {name}")  # fmt: skip
    pem = base64.b64decode(csr(cluster, name)["status"]["certificate"])
    return x509.load_pem_x509_certificate(pem)


def client_kubeconfig(cluster: Cluster, where: Path, key: ec.EllipticCurvePrivateKey,
                      cert: x509.Certificate, user: str) -> Path:  # fmt: skip
    admin = json.loads(ok(cluster, "config", "view", "--raw", "-o", "json"))
    cluster_entry = admin["clusters"][0]
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())  # fmt: skip
    config = {
        "apiVersion": "v1", "kind": "Config", "clusters": [cluster_entry],
        "users": [{"name": user, "user": {
            "client-certificate-data": base64.b64encode(
                cert.public_bytes(serialization.Encoding.PEM)).decode(),
            "client-key-data": base64.b64encode(key_pem).decode()}}],
        "contexts": [{"name": user, "context": {"cluster": cluster_entry["name"], "user": user}}],
        "current-context": user,
    }  # fmt: skip
    path = where / f"{user}.kubeconfig"
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    return path


@pytest.fixture
def names(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[list[str]]:
    made: list[str] = []
    yield made
    for name in made:
        run(cluster, "delete", "csr", name, "--wait=false")


@pytest.fixture
def api(cluster: Cluster) -> Iterator[Any]:
    kubernetes = pytest.importorskip("kubernetes")
    client = kubernetes.config.new_client_from_config(str(cluster.kubeconfig))
    try:
        yield client
    finally:
        client.close()


def test_approved_csr_certificate_authenticates_as_its_subject(
    cluster: Cluster, names: list[str], tmp_path: Path
) -> None:
    key, request = key_and_request("alice", ("dev-team", "qa"))
    names.append("alice")
    assert ok(cluster, "create", "-f", "-", stdin=manifest("alice", request)).strip() == (
        "certificatesigningrequest.certificates.k8s.io/alice created"
    )
    table = ok(cluster, "get", "csr", "alice").splitlines()
    assert table[0].split() == ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION",
                                "CONDITION"]  # fmt: skip
    assert table[1].split()[2:] == [CLIENT, "admin", "60m", "Pending"]
    # The requester is who created it, not what the manifest says.
    spec = csr(cluster, "alice")["spec"]
    assert spec["username"] == "admin" and "system:masters" in spec["groups"]
    assert ok(cluster, "certificate", "approve", "alice").strip() == (
        "certificatesigningrequest.certificates.k8s.io/alice approved"
    )
    cert = issued(cluster, "alice")
    approved = [c for c in csr(cluster, "alice")["status"]["conditions"] if c["type"] == "Approved"]
    assert approved[0]["reason"] == "KubectlApprove" and approved[0]["status"] == "True"
    assert approved[0]["lastTransitionTime"]
    assert ok(cluster, "get", "csr", "alice").splitlines()[1].split()[-1] == "Approved,Issued"
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "alice"
    lifetime = cert.not_valid_after_utc - datetime.datetime.now(datetime.UTC)
    assert datetime.timedelta(minutes=55) < lifetime <= datetime.timedelta(hours=1)
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]
    # The certificate is alice's credential: kubectl with it alone.
    config = client_kubeconfig(cluster, tmp_path, key, cert, "alice")
    whoami = run(cluster, "auth", "whoami", "-o", "json", kubeconfig=config)
    assert whoami.returncode == 0, whoami.stderr
    info = json.loads(whoami.stdout)["status"]["userInfo"]
    assert info["username"] == "alice"
    assert info["groups"] == ["dev-team", "qa", "system:authenticated"]
    refused = run(cluster, "get", "secrets", "-n", "default", kubeconfig=config)
    assert refused.returncode != 0
    assert ('secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" '
            'in the namespace "default"') in refused.stderr  # fmt: skip
    # Granted a role, alice (by her certificate's group) may.
    ok(cluster, "create", "rolebinding", "dev-view", "-n", "default", "--clusterrole=view",
       "--group=dev-team")  # fmt: skip
    try:
        wait_for(lambda: run(cluster, "get", "pods", "-n", "default", kubeconfig=config)
                 .returncode == 0, 30, message="alice's group binding")  # fmt: skip
    finally:
        run(cluster, "delete", "rolebinding", "dev-view", "-n", "default")


def test_python_client_approval_and_certificate(
    cluster: Cluster, names: list[str], api: Any, tmp_path: Path
) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    certs = kubernetes.client.CertificatesV1Api(api)
    key, request = key_and_request("bob", ("ops",))
    names.append("bob")
    body = kubernetes.client.V1CertificateSigningRequest(
        metadata=kubernetes.client.V1ObjectMeta(name="bob"),
        spec=kubernetes.client.V1CertificateSigningRequestSpec(
            request=base64.b64encode(request).decode(), signer_name=CLIENT,
            usages=["client auth"], expiration_seconds=7200,
        ),
    )  # fmt: skip
    made = certs.create_certificate_signing_request(body)
    assert made.spec.username == "admin" and made.status.certificate is None
    made.status.conditions = [kubernetes.client.V1CertificateSigningRequestCondition(
        type="Approved", status="True", reason="ByTest", message="approved by the test")]  # fmt: skip
    approved = certs.replace_certificate_signing_request_approval("bob", made)
    assert [c.type for c in approved.status.conditions] == ["Approved"]
    assert approved.status.conditions[0].last_update_time is not None
    cert = issued(cluster, "bob")
    # The Python client authenticates with the certificate too.
    config = client_kubeconfig(cluster, tmp_path, key, cert, "bob")
    as_bob = kubernetes.config.new_client_from_config(str(config))
    try:
        with pytest.raises(kubernetes.client.ApiException) as refused:
            kubernetes.client.CoreV1Api(as_bob).list_namespaced_secret("default")
        assert refused.value.status == 403
        assert (
            'User "bob" cannot list resource "secrets"' in json.loads(refused.value.body)["message"]
        )
    finally:
        as_bob.close()


def test_denied_csr_gets_no_certificate(cluster: Cluster, names: list[str]) -> None:
    _, denied_request = key_and_request("carol")
    _, approved_request = key_and_request("dave")
    names.extend(["carol", "dave"])
    ok(cluster, "create", "-f", "-", stdin=manifest("carol", denied_request))
    ok(cluster, "create", "-f", "-", stdin=manifest("dave", approved_request))
    assert ok(cluster, "certificate", "deny", "carol").strip() == (
        "certificatesigningrequest.certificates.k8s.io/carol denied"
    )
    ok(cluster, "certificate", "approve", "dave")
    issued(cluster, "dave")  # the signer has been through both
    carol = csr(cluster, "carol")
    assert "certificate" not in carol["status"]
    assert [(c["type"], c["reason"]) for c in carol["status"]["conditions"]] == [
        ("Denied", "KubectlDeny")
    ]
    assert ok(cluster, "get", "csr", "carol").splitlines()[1].split()[-1] == "Denied"
    # A denied request stays denied: kubectl refuses, and so does the server.
    again = run(cluster, "certificate", "approve", "carol")
    assert again.returncode != 0 and 'certificate signing request "carol" is already Denied' in (
        again.stderr
    )
    both = dict(carol)
    both["status"] = {"conditions": [*carol["status"]["conditions"],
                                     {"type": "Approved", "status": "True"}]}  # fmt: skip
    forced = run(cluster, "replace", "--raw",
                 "/apis/certificates.k8s.io/v1/certificatesigningrequests/carol/approval",
                 "-f", "-", stdin=json.dumps(both))  # fmt: skip
    assert forced.returncode != 0
    assert ("status.conditions[1].type: Invalid value: \"Approved\": Approved and Denied "
            "conditions are mutually exclusive") in forced.stderr  # fmt: skip
    assert "certificate" not in csr(cluster, "carol")["status"]


def test_signer_refuses_what_its_rules_forbid(cluster: Cluster, names: list[str]) -> None:
    """kube-apiserver-client-kubelet signs only system:node:NAME in system:nodes:
    approved anyway, the request fails with the signer's reason."""
    _, request = key_and_request("system:node:n1", ("evil",))
    names.append("not-a-node")
    ok(cluster, "create", "-f", "-", stdin=manifest(
        "not-a-node", request, KUBELET_CLIENT, ("digital signature", "client auth")))  # fmt: skip
    ok(cluster, "certificate", "approve", "not-a-node")
    wait_for(lambda: any(c["type"] == "Failed" for c in csr(cluster, "not-a-node")["status"]
                         .get("conditions", [])), 30, message="the Failed condition")  # fmt: skip
    status = csr(cluster, "not-a-node")["status"]
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "SignerValidationFailure"
    assert failed["message"] == "subject organization is not system:nodes"
    assert "certificate" not in status
    assert ok(cluster, "get", "csr", "not-a-node").splitlines()[1].split()[-1] == "Approved,Failed"


def test_invalid_requests_are_refused_as_kubernetes_does(cluster: Cluster) -> None:
    _, request = key_and_request("x")
    cases = [
        (manifest("bad1", b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
         "spec.request: Invalid value: \"<request data>\": PEM block type must be "
         "CERTIFICATE REQUEST"),
        (manifest("bad2", request, "no-slash"),
         "spec.signerName: Invalid value: \"no-slash\": must be a fully qualified domain and "
         "path of the form 'example.com/signer-name'"),
        (manifest("bad3", request, expiration=599),
         "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than "
         "600 seconds (10 minutes)"),
        (manifest("bad4", request, usages=("client auth", "client auth")),
         'spec.usages[1]: Duplicate value: "client auth"'),
        (manifest("bad5", request, usages=("flying",)),
         'spec.usages[0]: Unsupported value: "flying": supported values: "any", "cert sign"'),
        (manifest("bad6", request, usages=()), "spec.usages: Required value"),
    ]  # fmt: skip
    for body, message in cases:
        done = run(cluster, "create", "-f", "-", stdin=body)
        assert done.returncode != 0 and message in done.stderr, (message, done.stderr)
        assert "is invalid" in done.stderr
    assert "bad" not in ok(cluster, "get", "csr", "-o", "name")
    # The client signer never signs for system:masters (CertificateSubjectRestriction).
    _, masters = key_and_request("root", ("system:masters",))
    done = run(cluster, "create", "-f", "-", stdin=manifest("masters", masters))
    assert done.returncode != 0
    assert ('certificatesigningrequests.certificates.k8s.io "masters" is forbidden: use of '
            "kubernetes.io/kube-apiserver-client signer with system:masters group is not "
            "allowed") in done.stderr  # fmt: skip


CSR_WRITER = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: csr-writer}
rules:
- apiGroups: [certificates.k8s.io]
  resources: [certificatesigningrequests, certificatesigningrequests/approval,
              certificatesigningrequests/status]
  verbs: [create, get, list, update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: csr-writer}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: csr-writer}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: eve}]
"""


def test_approving_and_signing_need_the_signer_verbs(cluster: Cluster, names: list[str]) -> None:
    """Update on certificatesigningrequests/approval is not enough: approving
    needs `approve` on the signer (CertificateApproval), and writing a
    certificate into the status needs `sign` (CertificateSigning)."""
    ok(cluster, "apply", "-f", "-", stdin=CSR_WRITER)
    authority = cluster.running.server.authority
    assert authority is not None
    eve = authority.user_token("eve")
    _, request = key_and_request("eve")
    names.append("eve")

    def as_eve(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return run(cluster, f"--token={eve}", *args, stdin=stdin)

    try:
        wait_for(lambda: as_eve("create", "-f", "-", stdin=manifest("eve", request))
                 .returncode == 0, 30, message="eve's role")  # fmt: skip
        assert csr(cluster, "eve")["spec"]["username"] == "eve"
        refused = as_eve("certificate", "approve", "eve")
        assert refused.returncode != 0
        assert ('certificatesigningrequests.certificates.k8s.io "eve" is forbidden: user not '
                f'permitted to approve requests with signerName "{CLIENT}"') in refused.stderr  # fmt: skip
        forged = csr(cluster, "eve")
        forged["status"] = {"certificate": base64.b64encode(self_signed("eve")).decode()}
        refused = as_eve("replace", "--raw",
                         "/apis/certificates.k8s.io/v1/certificatesigningrequests/eve/status",
                         "-f", "-", stdin=json.dumps(forged))  # fmt: skip
        assert refused.returncode != 0
        assert "user not permitted to sign requests with signerName" in refused.stderr
        assert "certificate" not in (csr(cluster, "eve").get("status") or {})
    finally:
        run(cluster, "delete", "clusterrolebinding,clusterrole", "csr-writer")


def test_a_node_serving_certificate_is_no_client_certificate(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The cluster CA also signs agents' serving certificates (server auth
    only, CN system:node:NAME): presented to the API server as a client
    certificate, one authenticates no one."""
    from controlplane.apiserver.tls import sign_agent_csr

    pki = cluster.running.server.pki
    assert pki is not None
    key, request = key_and_request("n9")
    cert = x509.load_pem_x509_certificate(sign_agent_csr(pki, "n9", request))
    config = client_kubeconfig(cluster, tmp_path, key, cert, "n9")
    done = run(cluster, "auth", "whoami", "-o", "json", kubeconfig=config)
    assert done.returncode != 0
    assert "system:node:n9" not in done.stdout


def test_a_node_renewing_its_own_client_certificate_is_auto_approved(
    cluster: Cluster, names: list[str], tmp_path: Path
) -> None:
    """csrapproving: a kube-apiserver-client-kubelet request from the node it
    names is approved after a SubjectAccessReview (selfnodeclient, granted to
    system:nodes), signed, and the certificate is that node's credential; a
    node asking for another node's certificate is left pending."""
    token = cluster.running.server.node_token("auto-1")
    _, other = key_and_request("system:node:auto-2", ("system:nodes",))
    key, own = key_and_request("system:node:auto-1", ("system:nodes",))
    usages = ("digital signature", "client auth")
    names.extend(["auto-other", "auto-own"])
    for name, request in (("auto-other", other), ("auto-own", own)):
        done = run(cluster, f"--token={token}", "create", "-f", "-",
                   stdin=manifest(name, request, KUBELET_CLIENT, usages))  # fmt: skip
        assert done.returncode == 0, done.stderr
    cert = issued(cluster, "auto-own")
    (approved,) = csr(cluster, "auto-own")["status"]["conditions"]
    assert (approved["type"], approved["reason"], approved["message"]) == (
        "Approved", "AutoApproved",
        "Auto approving self kubelet client certificate after SubjectAccessReview.",
    )  # fmt: skip
    assert csr(cluster, "auto-own")["spec"]["username"] == "system:node:auto-1"
    assert not csr(cluster, "auto-other")["status"].get("conditions")
    config = client_kubeconfig(cluster, tmp_path, key, cert, "auto-1")
    whoami = run(cluster, "auth", "whoami", "-o", "json", kubeconfig=config)
    assert whoami.returncode == 0, whoami.stderr
    info = json.loads(whoami.stdout)["status"]["userInfo"]
    assert (info["username"], info["groups"]) == (
        "system:node:auto-1", ["system:nodes", "system:authenticated"])  # fmt: skip
    # Deleting the Node ends its certificate as it ends its token.
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "auto-1"}}
    created = run(cluster, "create", "-f", "-", stdin=json.dumps(node), kubeconfig=config)
    assert created.returncode == 0, created.stderr
    ok(cluster, "delete", "node", "auto-1")
    wait_for(lambda: run(cluster, "auth", "whoami", kubeconfig=config).returncode != 0, 30,
             message="the deleted node's certificate refused")  # fmt: skip
    assert "Unauthorized" in run(cluster, "auth", "whoami", kubeconfig=config).stderr
