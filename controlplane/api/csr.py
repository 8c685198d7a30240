"""Certificate signing requests as Kubernetes reads them (pkg/apis/certificates).

`parse_request` reads `spec.request` (base64 of a PEM `CERTIFICATE REQUEST`)
and checks its signature, as validateCSR (the names are read without a
crypto library, machinery.x509read; the signature is checked in a
short-lived child, `check_request`, once per request: the API server and the
controllers never load `cryptography`); `KEY_USAGES` is the set of usages
the API accepts; the built-in signers and the rules each puts on what it
signs are here (`signer_problem`: ValidateKubeletClientCSR,
ValidateKubeletServingCSR and the kube-apiserver-client usages, with their
messages), and `conditions`/`is_approved`/`is_denied` read a request's status.
Pure functions: the kind's validation, the API server's admission and the
signer controller share them.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import threading
from collections.abc import Iterable
from typing import Any

from machinery import inchild, x509read
from machinery.x509read import Names

KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"
KUBE_APISERVER_CLIENT_KUBELET = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING = "kubernetes.io/kubelet-serving"
LEGACY_UNKNOWN = "kubernetes.io/legacy-unknown"
BUILTIN_SIGNERS = (KUBE_APISERVER_CLIENT, KUBE_APISERVER_CLIENT_KUBELET, KUBELET_SERVING)

NODES_GROUP = "system:nodes"
NODE_PREFIX = "system:node:"
MASTERS_GROUP = "system:masters"

# Every usage the API accepts (allValidUsages), sorted as sets.List() lists them.
KEY_USAGES = (
    "any", "cert sign", "client auth", "code signing", "content commitment", "crl sign",
    "data encipherment", "decipher only", "digital signature", "email protection",
    "encipher only", "ipsec end system", "ipsec tunnel", "ipsec user", "key agreement",
    "key encipherment", "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime", "server auth",
    "signing", "timestamping",
)  # fmt: skip

APPROVED, DENIED, FAILED = "Approved", "Denied", "Failed"
TRUE_ONLY = (APPROVED, DENIED, FAILED)  # condition types whose status may only be True

# The usages each kubelet signer requires (with or without key encipherment).
_KUBELET_CLIENT = ({"digital signature", "key encipherment", "client auth"},
                   {"digital signature", "client auth"})  # fmt: skip
_KUBELET_SERVING = ({"digital signature", "key encipherment", "server auth"},
                    {"digital signature", "server auth"})  # fmt: skip


class RequestError(ValueError):
    """spec.request is not a PEM certificate request signed by its key."""


def request_pem(spec: Any) -> bytes:
    """The PEM bytes of spec.request (JSON carries []byte as base64)."""
    value = spec.get("request") if isinstance(spec, dict) else None
    if not isinstance(value, str):
        raise RequestError("PEM block type must be CERTIFICATE REQUEST")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise RequestError("illegal base64 data") from None


def check_request(pem: str) -> str:
    """(In a child.) Why `pem` is not a certificate request signed by its own
    key, as certificates.ParseCSR and CheckSignature say it ("": it is)."""
    from cryptography import x509

    try:
        request = x509.load_pem_x509_csr(pem.encode())
    except ValueError as err:
        return f"x509: malformed certificate request ({err})"
    try:
        valid = request.is_signature_valid
    except Exception:  # an algorithm cryptography cannot check
        valid = False
    return "" if valid else "x509: ECDSA verification failure"


_checked: dict[bytes, str] = {}  # sha256 of a request -> check_request's answer
_checked_lock = threading.Lock()
CHECKED = 256


def _problem(pem: bytes) -> str:
    digest = hashlib.sha256(pem).digest()
    with _checked_lock:
        known = _checked.get(digest)
    if known is not None:
        return known
    problem: str = inchild.call(
        __name__, "check_request", unless_loaded="cryptography", pem=pem.decode(errors="replace")
    )
    with _checked_lock:
        if len(_checked) >= CHECKED:
            _checked.clear()
        _checked[digest] = problem
    return problem


def parse_request(pem: bytes) -> Names:
    """certificates.ParseCSR and CheckSignature: the request's names, or RequestError."""
    begin = pem.find(b"-----BEGIN ")
    if begin < 0 or not pem[begin:].startswith(b"-----BEGIN CERTIFICATE REQUEST-----"):
        raise RequestError("PEM block type must be CERTIFICATE REQUEST")
    try:  # the structure first: a malformed request costs no child process
        names = x509read.request_names(pem[begin:])
    except ValueError as err:
        raise RequestError(f"x509: malformed certificate request ({err})") from None
    problem = _problem(pem[begin:])
    if problem:
        raise RequestError(problem)
    return names


def subject(request: Names) -> tuple[str, list[str]]:
    """(common name, organizations) of a request's subject."""
    return request.common_name, list(request.organizations)


def _usages_list(required: set[str]) -> str:
    return "[" + " ".join(sorted(required)) + "]"


def _kubelet_problem(request: Names, usages: set[str], serving: bool) -> str:
    cn, orgs = subject(request)
    dns, ips = request.dns, request.ips
    if orgs != [NODES_GROUP]:
        return "subject organization is not system:nodes"
    if serving and not dns and not ips:
        return "DNS or IP subjectAltName is required"
    if not serving and dns:
        return "DNS subjectAltNames are not allowed"
    if request.emails:
        return "Email subjectAltNames are not allowed"
    if not serving and ips:
        return "IP subjectAltNames are not allowed"
    if request.uris:
        return "URI subjectAltNames are not allowed"
    required = _KUBELET_SERVING if serving else _KUBELET_CLIENT
    if serving and usages not in required:
        return f"usages did not match {_usages_list(required[0])}"
    if not cn.startswith(NODE_PREFIX):
        return "subject common name does not begin with system:node:"
    if not serving and usages not in required:
        return f"usages did not match {_usages_list(required[0])}"
    return ""


def _client_usages_problem(usages: Iterable[str]) -> str:
    client_auth = False
    for usage in usages:
        if usage in ("digital signature", "key encipherment"):
            continue
        if usage != "client auth":
            return f"invalid usage for client certificate: {usage}"
        client_auth = True
    return "" if client_auth else "missing required usage for client certificate: client auth"


def signer_problem(signer: str, request: Names, usages: list[str]) -> str:
    """Why a built-in signer refuses to sign this request ("" when it signs it),
    as kube-controller-manager's signers check before signing."""
    if signer == KUBE_APISERVER_CLIENT_KUBELET:
        return _kubelet_problem(request, set(usages), serving=False)
    if signer == KUBELET_SERVING:
        return _kubelet_problem(request, set(usages), serving=True)
    if signer == KUBE_APISERVER_CLIENT:
        return _client_usages_problem(usages)
    return f"unknown signer {signer}"


def conditions(csr: Any) -> list[dict[str, Any]]:
    status = csr.get("status") if isinstance(csr, dict) else None
    found = status.get("conditions") if isinstance(status, dict) else None
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def has_condition(csr: Any, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status", "True") == "True"
               for c in conditions(csr))  # fmt: skip


def is_approved(csr: Any) -> bool:
    """Approved and not Denied (IsCertificateRequestApproved)."""
    return has_condition(csr, APPROVED) and not has_condition(csr, DENIED)
