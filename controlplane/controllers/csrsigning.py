"""The CSR signing controller: the built-in signers sign approved requests
with the cluster CA (kube-controller-manager's csrsigning).

A CertificateSigningRequest that is Approved (and not Denied or Failed),
has no certificate yet and names one of kubernetes.io/kube-apiserver-client,
kube-apiserver-client-kubelet or kubelet-serving is checked against that
signer's rules (controlplane/api/csr.py: the kubelet signers' subject, SAN
and usage rules; the client signer's usages). One that fails them gets the
Failed condition (reason SignerValidationFailure, the rule's message); the
others get `status.certificate`: the request's subject, SANs and public key,
the requested key usages, issued by the CA given by --cluster-signing-cert-file
and --cluster-signing-key-file (skiff controlplane passes its own CA), valid
from five minutes ago (clock skew, as Kubernetes backdates) for
spec.expirationSeconds, at most --cluster-signing-duration (a year by
default) and never past the CA's own end. Requests for other signers,
pending or denied ones are left alone.
"""

from __future__ import annotations

import base64
import copy
import datetime
import logging
from pathlib import Path
from typing import Any

from controlplane.api import csr
from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.controllers.base import Controller, ControllerContext
from machinery import inchild, rfc3339

log = logging.getLogger(__name__)

KIND = "CertificateSigningRequest"


class ChildSigner:
    """The CA certificate and key the signers sign with (read from their
    files at start), and the longest certificate they issue; each signature
    is made in a child (csrsigner.sign)."""

    def __init__(self, cert_pem: bytes, key_pem: bytes, max_duration: datetime.timedelta) -> None:
        self.cert_pem, self.key_pem, self.max_duration = cert_pem, key_pem, max_duration

    @classmethod
    def from_files(cls, cert: str, key: str, max_duration: datetime.timedelta) -> ChildSigner:
        return cls(Path(cert).read_bytes(), Path(key).read_bytes(), max_duration)

    def sign(self, request_pem: bytes, usages: list[str], expiration_seconds: int | None,
             now: datetime.datetime) -> bytes:  # fmt: skip
        """The PEM certificate for `request_pem` (see the module docstring)."""
        cert: str = inchild.call(
            "controlplane.controllers.csrsigner", "sign", unless_loaded="cryptography",
            cert_pem=self.cert_pem.decode(),
            key_pem=self.key_pem.decode(), max_seconds=self.max_duration.total_seconds(),
            request_pem=request_pem.decode(), usages=usages,
            expiration_seconds=expiration_seconds, now=now.timestamp(),
        )  # fmt: skip
        return cert.encode()


class CsrSigningController(Controller):
    name = "csrsigning"
    default_workers = 2

    def __init__(self, ctx: ControllerContext, authority: ChildSigner) -> None:
        super().__init__(ctx)
        self.authority = authority
        self.requests = self.watch_primary(KIND)

    def sync(self, key: str) -> float | None:
        obj = self.requests.store.get(key)
        if obj is None or not csr.is_approved(obj) or csr.has_condition(obj, csr.FAILED):
            return None
        spec: Any = obj.get("spec") or {}
        signer = spec.get("signerName")
        if signer not in csr.BUILTIN_SIGNERS or (obj.get("status") or {}).get("certificate"):
            return None
        try:
            request_pem = csr.request_pem(spec)
            request = csr.parse_request(request_pem)
        except csr.RequestError as err:  # validation refused these: an old object
            self._write(obj, failed=f"unable to parse csr {key!r}: {err}")
            return None
        usages = [str(u) for u in spec.get("usages") or []]
        problem = csr.signer_problem(signer, request, usages)
        if problem:
            self._write(obj, failed=problem)
            return None
        expiration = spec.get("expirationSeconds")
        pem = self.authority.sign(
            request_pem, usages, expiration if isinstance(expiration, int) else None,
            datetime.datetime.now(datetime.UTC),
        )  # fmt: skip
        self._write(obj, certificate=pem)
        return None

    def _write(self, obj: Object, failed: str = "", certificate: bytes = b"") -> None:
        """The status write, at the version read (a Conflict re-queues the request)."""
        body = copy.deepcopy(obj)
        status = body.setdefault("status", {})
        if failed:
            now = rfc3339.now()
            status.setdefault("conditions", []).append({
                "type": csr.FAILED, "status": "True", "reason": "SignerValidationFailure",
                "message": failed, "lastUpdateTime": now, "lastTransitionTime": now,
            })  # fmt: skip
            log.info("csrsigning: %s failed: %s", body["metadata"].get("name"), failed)
        else:
            status["certificate"] = base64.b64encode(certificate).decode()
        try:
            self.client.update_status(KIND, body)
        except errors.NotFound:
            pass


def init(ctx: ControllerContext) -> Controller | None:
    config = ctx.config
    if not config.cluster_signing_cert_file or not config.cluster_signing_key_file:
        log.info("csrsigning: no --cluster-signing-cert-file/--cluster-signing-key-file")
        return None
    authority = ChildSigner.from_files(
        config.cluster_signing_cert_file,
        config.cluster_signing_key_file,
        datetime.timedelta(seconds=config.cluster_signing_duration),
    )
    return CsrSigningController(ctx, authority)
