"""A kubeconfig as kind writes one, for a skiff cluster: the user is a
client certificate (CN kubernetes-admin, O system:masters, as kubeadm's
admin.conf before 1.29; later ones use kubeadm:cluster-admins, which kubeadm
itself binds to cluster-admin) issued by the cluster CA, its certificate and
key inline (client-certificate-data, client-key-data), named as kind names
its cluster, user and context (`kind-NAME`). The cluster entry is the one
skiff wrote. Suites written against kind read the user's certificate and
expect `kubernetes-admin` from a SelfSubjectReview.
"""

from __future__ import annotations

import base64
import datetime
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from machinery.atomicfile import write_private

USER = "kubernetes-admin"
GROUP = "system:masters"


def admin_certificate(ca_cert_pem: bytes, ca_key_pem: bytes) -> tuple[bytes, bytes]:
    """(certificate, key) PEM for kubernetes-admin, valid a day."""
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise TypeError(f"the cluster CA's key is a {type(ca_key).__name__}")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, GROUP),
        x509.NameAttribute(NameOID.COMMON_NAME, USER),
    ])  # fmt: skip
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,  # kind's "RSA PRIVATE KEY"
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def write_kind_kubeconfig(skiff_kubeconfig: Path, pki: Path, out: Path, name: str = "kind") -> Path:
    """`out`: skiff's cluster entry, kind's names, the admin certificate."""
    skiff = yaml.safe_load(skiff_kubeconfig.read_text())
    cert, key = admin_certificate((pki / "ca.crt").read_bytes(), (pki / "ca.key").read_bytes())
    full = f"kind-{name}"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": full, "cluster": skiff["clusters"][0]["cluster"]}],
        "users": [{"name": full, "user": {
            "client-certificate-data": base64.b64encode(cert).decode(),
            "client-key-data": base64.b64encode(key).decode(),
        }}],
        "contexts": [{"name": full, "context": {"cluster": full, "user": full}}],
        "current-context": full,
        "preferences": {},
    }  # fmt: skip
    write_private(out, yaml.safe_dump(doc, sort_keys=False))
    return out
