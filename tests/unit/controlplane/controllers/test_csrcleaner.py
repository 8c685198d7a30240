"""The CSR cleaner (kube-controller-manager's csrcleaner) on the in-memory
API with a clock the test moves: approved-and-issued and denied requests go
an hour after their condition, pending ones 24 hours after creation, issued
ones when their certificate expires; an approved request without a
certificate stays."""

from __future__ import annotations

import base64
import datetime
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from controlplane.controllers.csrcleaner import due
from machinery.rfc3339 import format_time

HOUR = 3600.0
KIND = "CertificateSigningRequest"


def request_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    req = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "alice")]))
        .sign(key, hashes.SHA256())
    )
    return base64.b64encode(req.public_bytes(serialization.Encoding.PEM)).decode()


def certificate(not_after: float) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "alice")])
    utc = datetime.UTC
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(datetime.datetime.fromtimestamp(not_after - 10 * HOUR, utc))
        .not_valid_after(datetime.datetime.fromtimestamp(not_after, utc))
        .sign(key, hashes.SHA256())
    )
    return base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode()


def csr(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": KIND,
        "metadata": {"name": name},
        "spec": {
            "request": request_pem(),
            "signerName": "example.com/signer",
            "usages": ["client auth"],
        },
    }


def condition(kind: str, now: float) -> dict[str, Any]:
    when = format_time(now)
    return {"type": kind, "status": "True", "reason": "Test", "message": "t",
            "lastUpdateTime": when, "lastTransitionTime": when}  # fmt: skip


def test_due_times_follow_kubernetes() -> None:
    t = 1_700_000_000.0
    pending = {**csr("p"), "metadata": {"name": "p", "creationTimestamp": format_time(t)}}
    assert due(pending) == (t + 24 * HOUR, "pending and unhandled")
    denied = {**pending, "status": {"conditions": [condition("Denied", t)]}}
    assert due(denied) == (t + HOUR, "denied")
    failed = {**pending, "status": {"conditions": [condition("Failed", t)]}}
    assert due(failed) == (t + HOUR, "failed")
    approved = {**pending, "status": {"conditions": [condition("Approved", t)]}}
    assert due(approved) == (None, "")  # not issued: the signer may still sign it
    issued = {**pending, "status": {"conditions": [condition("Approved", t)],
                                    "certificate": certificate(t + 600)}}  # fmt: skip
    assert due(issued) == (t + 600, "its certificate expired")
    issued["status"]["certificate"] = certificate(t + 48 * HOUR)
    assert due(issued) == (t + HOUR, "approved and issued")


def test_the_cleaner_deletes_each_request_when_it_is_due(env) -> None:
    e = env("csrcleaner")
    t0 = e.clock.now()
    for name in ("pending", "denied", "approved", "short", "long"):
        e.client.create(KIND, csr(name))

    def set_status(name: str, status: dict[str, Any]) -> None:
        obj = e.client.get(KIND, name)
        obj["status"] = status
        e.client.update_status(KIND, obj)

    set_status("denied", {"conditions": [condition("Denied", t0)]})
    set_status("approved", {"conditions": [condition("Approved", t0)]})
    set_status("short", {"conditions": [condition("Approved", t0)],
                         "certificate": certificate(t0 + 600)})  # fmt: skip
    set_status("long", {"conditions": [condition("Approved", t0)],
                        "certificate": certificate(t0 + 30 * 24 * HOUR)})  # fmt: skip

    def names() -> set[str]:
        return {o["metadata"]["name"] for o in e.client.list(KIND).items}

    def at(seconds: float, expected: set[str]) -> None:
        e.clock.set(t0 + seconds)
        e.wait(lambda: names() == expected, message=f"at {seconds} s: {expected}")

    at(599, {"pending", "denied", "approved", "short", "long"})
    at(601, {"pending", "denied", "approved", "long"})  # its certificate expired
    at(HOUR - 1, {"pending", "denied", "approved", "long"})
    at(HOUR + 1, {"pending", "approved"})  # denied, approved and issued: an hour on
    at(24 * HOUR - 1, {"pending", "approved"})
    at(24 * HOUR + 1, {"approved"})  # pending: a day on
    at(30 * 24 * HOUR, {"approved"})  # never issued: stays
