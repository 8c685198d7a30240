"""Certificate signing requests as Kubernetes reads them (pkg/apis/certificates).

`parse_request` reads `spec.request` (base64 of a PEM `CERTIFICATE REQUEST`)
and checks its signature, as validateCSR; `KEY_USAGES` is the set of usages
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
from collections.abc import Iterable
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID

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


def parse_request(pem: bytes) -> x509.CertificateSigningRequest:
    """certificates.ParseCSR and CheckSignature: the request, or RequestError."""
    begin = pem.find(b"-----BEGIN ")
    if begin < 0 or not pem[begin:].startswith(b"-----BEGIN CERTIFICATE REQUEST-----"):
        raise RequestError("PEM block type must be CERTIFICATE REQUEST")
    try:
        request = x509.load_pem_x509_csr(pem[begin:])
    except ValueError as err:
        raise RequestError(f"x509: malformed certificate request ({err})") from None
    try:
        valid = request.is_signature_valid
    except Exception:  # an algorithm cryptography cannot check
        valid = False
    if not valid:
        raise RequestError("x509: ECDSA verification failure")
    return request


def subject(request: x509.CertificateSigningRequest) -> tuple[str, list[str]]:
    """(common name, organizations) of a request's subject."""
    names = request.subject
    cn = names.get_attributes_for_oid(NameOID.COMMON_NAME)
    orgs = names.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    return (str(cn[0].value) if cn else "", [str(o.value) for o in orgs])


def alt_names(request: x509.CertificateSigningRequest) -> x509.SubjectAlternativeName:
    """A request's subject alternative names (none: an empty list)."""
    return _sans(request)


def _sans(request: x509.CertificateSigningRequest) -> x509.SubjectAlternativeName:
    try:
        found: x509.SubjectAlternativeName = request.extensions.get_extension_for_class(
            x509.SubjectAlternativeName
        ).value
        return found
    except x509.ExtensionNotFound:
        return x509.SubjectAlternativeName([])


def _usages_list(required: set[str]) -> str:
    return "[" + " ".join(sorted(required)) + "]"


def _kubelet_problem(
    request: x509.CertificateSigningRequest, usages: set[str], serving: bool
) -> str:
    cn, orgs = subject(request)
    sans = _sans(request)
    dns = sans.get_values_for_type(x509.DNSName)
    ips = sans.get_values_for_type(x509.IPAddress)
    if orgs != [NODES_GROUP]:
        return "subject organization is not system:nodes"
    if serving and not dns and not ips:
        return "DNS or IP subjectAltName is required"
    if not serving and dns:
        return "DNS subjectAltNames are not allowed"
    if sans.get_values_for_type(x509.RFC822Name):
        return "Email subjectAltNames are not allowed"
    if not serving and ips:
        return "IP subjectAltNames are not allowed"
    if sans.get_values_for_type(x509.UniformResourceIdentifier):
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


def signer_problem(signer: str, request: x509.CertificateSigningRequest, usages: list[str]) -> str:
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
