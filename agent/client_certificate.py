"""The node's client certificate, as the kubelet's certificate manager keeps it.

A node joins with a bearer token (bootstrap.py mints it), then proves who
it is with an expiring client certificate instead: it makes a key, asks
for a certificate through the CertificateSigningRequest API (signer
`kubernetes.io/kube-apiserver-client-kubelet`, subject CN
`system:node:NAME`, O `system:nodes`, usages digital signature and client
auth), which the control plane's csrapproving controller approves for a
node asking for itself and its csrsigning controller signs (a year, or
`--client-certificate-seconds`). Once issued, the certificate and key go
into the node's credential file (0600, atomically) and every call of the
agent's API client uses them (`GrpcApiClient.reconnect`), sending no token.

Before it expires it is rotated the same way, authenticated by the
certificate itself: at a random point between 70% and 90% of its
lifetime, as the kubelet's (jitter, so a fleet's renewals spread out). A
request that is denied, fails or is not answered is retried with
backoff; the agent keeps working with what it has meanwhile. All of it
runs in one thread and never delays the agent's start.
"""

from __future__ import annotations

import base64
import datetime
import logging
import random
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controlplane.client import errors
from controlplane.client.config import ClientConfig, write_config
from machinery import x509read
from machinery.certrequest import new_request

log = logging.getLogger(__name__)

SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
USAGES = ["digital signature", "client auth"]
NODES_GROUP = "system:nodes"
ROTATE_FROM, ROTATE_TO = 0.7, 0.9  # of the lifetime, as the kubelet's jitteryDuration
ISSUE_TIMEOUT = 900.0  # how long one request waits for its certificate (the kubelet's 15 min)
POLL = 1.0


class RequestRefused(Exception):
    """The request was denied or failed; the message says which and why."""


def key_and_request(node: str) -> tuple[bytes, bytes]:
    """(private key PEM, CSR PEM) for node `node`'s client certificate."""
    return new_request((("O", NODES_GROUP), ("CN", f"system:node:{node}")))


def csr_object(
    request_pem: bytes, seconds: int = 0, signer: str = SIGNER, usages: list[str] = USAGES
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "request": base64.b64encode(request_pem).decode(),
        "signerName": signer,
        "usages": usages,
    }
    if seconds:
        spec["expirationSeconds"] = seconds
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"generateName": "csr-"},
        "spec": spec,
    }


def issued(csr: dict[str, Any]) -> bytes:
    """The certificate of a CSR once signed (b"" before); RequestRefused
    once it is denied or failed."""
    status = csr.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") in ("Denied", "Failed") and cond.get("status", "True") == "True":
            why = cond.get("message") or cond.get("reason") or ""
            raise RequestRefused(f"{csr['metadata']['name']}: {cond['type']}: {why}")
    cert = status.get("certificate") or ""
    return base64.b64decode(cert) if cert else b""


def lifetime(cert_pem: bytes) -> tuple[datetime.datetime, datetime.datetime]:
    return x509read.validity(cert_pem)


def certificate_current(cert_pem: bytes, now: datetime.datetime | None = None) -> bool:
    """Whether a certificate is within its dates (False when unreadable)."""
    try:
        start, end = lifetime(cert_pem)
    except ValueError:
        return False
    at = now or datetime.datetime.now(datetime.UTC)
    return start <= at < end


def rotation_time(cert_pem: bytes, rng: random.Random) -> datetime.datetime:
    """When to renew: a random point between 70% and 90% of its lifetime."""
    start, end = lifetime(cert_pem)
    share = ROTATE_FROM + (ROTATE_TO - ROTATE_FROM) * rng.random()
    return start + (end - start) * share


def request_certificate(
    api: Any, node: str, stop: threading.Event, seconds: int = 0, timeout: float = ISSUE_TIMEOUT
) -> tuple[bytes, bytes]:
    """Ask for a client certificate and wait for it: (cert PEM, key PEM).
    Raises RequestRefused, errors.ApiError, or TimeoutError (also on stop)."""
    key_pem, request_pem = key_and_request(node)
    return wait_issued(api, node, csr_object(request_pem, seconds), key_pem, stop, timeout)


def wait_issued(
    api: Any,
    node: str,
    request: dict[str, Any],
    key_pem: bytes,
    stop: threading.Event,
    timeout: float = ISSUE_TIMEOUT,
) -> tuple[bytes, bytes]:
    """Create the CSR `request` and wait for its certificate: (cert PEM, `key_pem`).
    Raises RequestRefused, errors.ApiError, or TimeoutError (also on stop)."""
    made = api.create("CertificateSigningRequest", request)
    name = made["metadata"]["name"]
    log.info("node=%s asked for a certificate of %s (%s)", node, request["spec"]["signerName"],
             name)  # fmt: skip
    waited = 0.0
    while waited < timeout:
        cert = issued(api.get("CertificateSigningRequest", name))
        if cert:
            return cert, key_pem
        if stop.wait(POLL):
            break
        waited += POLL
    raise TimeoutError(f"{name}: no certificate within {timeout:.0f}s")


RETRIED: tuple[type[Exception], ...] = (RequestRefused, TimeoutError, errors.ApiError, ValueError)


def renew_until_stopped(
    stop: threading.Event,
    due: Callable[[], float],
    renew: Callable[[], None],
    what: str,
    retried: tuple[type[Exception], ...] = RETRIED,
) -> None:
    """A certificate manager's loop (client and serving): wait until `due()`,
    `renew()`, and on a `retried` error try again with backoff (2 s doubling
    to 5 min), until `stop` is set."""
    backoff = 2.0
    while not stop.is_set():
        if stop.wait(due()):
            return
        try:
            renew()
            backoff = 2.0
        except retried as err:
            log.warning("%s: %s; retrying in %.0fs", what, err, backoff)
            if stop.wait(backoff):
                return
            backoff = min(backoff * 2, 300.0)


class CertificateManager:
    """Gets the node's first client certificate and rotates it (module docstring)."""

    def __init__(
        self,
        api: Any,  # a GrpcApiClient: create/get, reconnect
        node: str,
        credential_file: Path,
        stop: threading.Event,
        seconds: int = 0,
        now: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
        rng: random.Random | None = None,
    ) -> None:
        self.api = api
        self.node = node
        self.credential_file = credential_file
        self.stop = stop
        self.seconds = seconds
        self.now = now
        self.rng = rng or random.Random()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="client-cert", daemon=True)
        self._thread.start()

    def due(self) -> float:
        """Seconds until the current certificate should be renewed (0: now)."""
        cfg: ClientConfig = self.api.config
        if not cfg.cert_pem:
            return 0.0
        try:
            when = rotation_time(cfg.cert_pem, self.rng)
        except ValueError:
            return 0.0
        return max(0.0, (when - self.now()).total_seconds())

    def renew(self) -> None:
        """One request; on success the credential file and the client use it."""
        cert, key = request_certificate(self.api, self.node, self.stop, self.seconds)
        cfg = self.api.config.with_certificate(cert, key)
        write_config(self.credential_file, cfg)
        self.api.reconnect(cfg)
        _, end = lifetime(cert)
        log.info("node=%s client certificate in use, valid until %s", self.node, end.isoformat())

    def run(self) -> None:
        renew_until_stopped(self.stop, self.due, self.renew, f"node={self.node} client certificate")
