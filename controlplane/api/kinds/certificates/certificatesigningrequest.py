"""CertificateSigningRequest (certificates.k8s.io/v1, cluster-scoped): a
request for a certificate from a named signer.

As Kubernetes has it: short name `csr`; the status subresource (a signer
writes status.certificate and the Failed condition) and the approval
subresource (`kubectl certificate approve|deny` add the Approved or Denied
condition). spec.username, uid, groups and extra are the requester's, set
by the API server at create (controlplane/apiserver/certificates.py, which
also holds the approve/sign/subject admission). Validation
(ValidateCertificateSigningRequestCreate/Update): spec.request a PEM
CERTIFICATE REQUEST signed by its key; usages required, known, unique;
signerName `domain/path` (never kubernetes.io/legacy-unknown);
expirationSeconds at least 600; conditions typed, Approved/Denied/Failed
only True, Approved and Denied exclusive, none removed; status.certificate
only CERTIFICATE PEM blocks, set once. The update strategies
(`prepare_update`): the spec never changes; only the approval changes
Approved/Denied; only the status changes the certificate. Columns, as
Kubernetes' printer: NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from controlplane.api import csr
from controlplane.api.checks import DNS_LABEL_MESSAGE, Errors, mapping
from controlplane.api.display import age, human_duration, name, spec
from controlplane.api.dnsnames import is_dns_label
from controlplane.api.kinds.definition import Column, KindDef, Printer, Subresource
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, facts
from controlplane.api.schema import declare
from machinery import rfc3339, x509read

Object = dict[str, Any]

CERTIFICATES = "io.k8s.api.certificates.v1"
MIN_EXPIRATION = 600
_PEM = re.compile(rb"-----BEGIN ([^-\r\n]*)-----\r?\n(.*?)-----END \1-----", re.S)


def _dns_labels(e: Errors, path: str, value: str, labels: list[str]) -> None:
    """The first of `labels` that is no DNS label, reported against `value`."""
    bad = next((label for label in labels if not is_dns_label(label)), None)
    if bad is not None:
        e.invalid(path, value, f'validating label "{bad}": {DNS_LABEL_MESSAGE}')


def _signer_name(e: Errors, path: str, signer: Any) -> None:
    """ValidateSignerName."""
    if not isinstance(signer, str) or not signer:
        e.required(path)
        return
    segments = signer.split("/")
    if len(segments) != 2:
        e.invalid(path, signer, "must be a fully qualified domain and path of the form "
                  "'example.com/signer-name'")  # fmt: skip
        return
    domain, rest = segments
    if len(domain) > 253:
        e.too_long(path, 253)
    labels = domain.split(".")
    _dns_labels(e, path, domain, labels)
    if len(labels) < 2:
        e.invalid(path, domain, "should be a domain with at least two segments separated by dots")
    _dns_labels(e, path, rest, rest.split("."))
    if len(rest) > 253 - len(domain) - 1:
        e.too_long(path, 253 - len(domain) - 1)


def certificate_pem(status: Any) -> bytes:
    """status.certificate's bytes (b"" when none or not base64)."""
    value = status.get("certificate") if isinstance(status, dict) else None
    if not isinstance(value, str) or not value:
        return b""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return b"\0"  # not base64: never a certificate


def certificate_problem(pem: bytes) -> str:
    """validateCertificate: "" when pem is CERTIFICATE blocks only (or empty)."""
    if not pem:
        return ""
    blocks = 0
    for block in _PEM.finditer(pem):
        kind_, body = block.group(1).decode(errors="replace"), block.group(0)
        if kind_ != "CERTIFICATE":
            return f'only CERTIFICATE PEM blocks are allowed, found "{kind_}"'
        if b":" in block.group(2).split(b"\n", 1)[0]:
            return "no PEM block headers are permitted"
        try:
            x509read.check(body)  # its structure: read without a crypto library
        except ValueError as err:
            return f"x509: malformed certificate ({err})"
        blocks += 1
    return "" if blocks else "must contain at least one CERTIFICATE PEM block"


def _conditions(e: Errors, obj: Object, old: Object | None) -> None:
    """validateConditions, tolerating in an update what the stored object has."""
    found = (obj.get("status") or {}).get("conditions") if isinstance(obj.get("status"),
                                                                      dict) else None  # fmt: skip
    if found is None:
        return
    path = "status.conditions"
    if not isinstance(found, list):
        e.add(path, "must be a list")
        return
    olds = csr.conditions(old) if old is not None else []
    old_types = [c.get("type") for c in olds]
    both_old = csr.APPROVED in old_types and csr.DENIED in old_types
    seen: set[str] = set()
    approved = denied = False
    for i, c in enumerate(found):
        if not isinstance(c, dict):
            e.add(f"{path}[{i}]", "must be an object")
            continue
        ctype, status = c.get("type"), c.get("status")
        if not ctype and "" not in old_types:
            e.required(f"{path}[{i}].type")
        allowed = ("True",) if ctype in csr.TRUE_ONLY else ("False", "True", "Unknown")
        if not status:
            e.required(f"{path}[{i}].status")
        elif status not in allowed:
            e.not_supported(f"{path}[{i}].status", status, allowed)
        if not both_old and ctype in (csr.APPROVED, csr.DENIED):
            approved, denied = approved or ctype == csr.APPROVED, denied or ctype == csr.DENIED
            if approved and denied:
                e.invalid(f"{path}[{i}].type", ctype,
                          "Approved and Denied conditions are mutually exclusive")  # fmt: skip
        if isinstance(ctype, str) and ctype in seen and len(set(old_types)) == len(old_types):
            e.duplicate(f"{path}[{i}].type", ctype)
        if isinstance(ctype, str):
            seen.add(ctype)


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    csr_spec: Any = obj.get("spec")
    if not mapping(e, "spec", csr_spec, required=True):
        return
    old_spec: Any = (old or {}).get("spec") or {}
    try:
        csr.parse_request(csr.request_pem(csr_spec))
    except csr.RequestError as err:
        e.invalid("spec.request", "<request data>", str(err))
    usages: Any = csr_spec.get("usages")
    if not usages:
        e.required("spec.usages")
    elif not isinstance(usages, list):
        e.add("spec.usages", "must be a list of strings")
    else:
        old_usages = old_spec.get("usages") if isinstance(old_spec.get("usages"), list) else []
        unknown_ok = any(u not in csr.KEY_USAGES for u in old_usages)
        dup_ok = len(set(map(str, old_usages))) != len(old_usages)
        for i, usage in enumerate(usages):
            if usage not in csr.KEY_USAGES and not unknown_ok:
                e.not_supported(f"spec.usages[{i}]", usage, csr.KEY_USAGES)
            if usage in usages[:i] and not dup_ok:
                e.duplicate(f"spec.usages[{i}]", usage)
    signer = csr_spec.get("signerName")
    if signer == csr.LEGACY_UNKNOWN and old_spec.get("signerName") != signer:
        e.invalid("spec.signerName", signer, "the legacy signerName is not allowed via this "
                  "API version")  # fmt: skip
    else:
        _signer_name(e, "spec.signerName", signer)
    expiration = csr_spec.get("expirationSeconds")
    if expiration is not None:
        if isinstance(expiration, bool) or not isinstance(expiration, int):
            e.invalid("spec.expirationSeconds", expiration, "must be an integer")
        elif expiration < MIN_EXPIRATION:
            e.invalid("spec.expirationSeconds", expiration,
                      "may not specify a duration less than 600 seconds (10 minutes)")  # fmt: skip
    _conditions(e, obj, old)
    cert = certificate_pem(obj.get("status"))
    old_cert = certificate_pem((old or {}).get("status"))
    arbitrary = old is not None and (cert == old_cert or bool(certificate_problem(old_cert)))
    if not arbitrary:
        problem = certificate_problem(cert)
        if problem:
            e.invalid("status.certificate", "<certificate data>", problem)
    if old is not None:
        _update(e, obj, old, cert, old_cert)


def _update(e: Errors, obj: Object, old: Object, cert: bytes, old_cert: bytes) -> None:
    """validateCertificateSigningRequestUpdate's rules (after prepare_update:
    a write that may not change approval conditions or the certificate has
    had them restored, so what differs here was asked for where it may be)."""
    news, olds = csr.conditions(obj), csr.conditions(old)
    for ctype in (csr.APPROVED, csr.DENIED, csr.FAILED):
        if len([c for c in news if c.get("type") == ctype]) < len(
            [c for c in olds if c.get("type") == ctype]
        ):
            e.forbidden(
                "status.conditions", f'updates may not remove a condition of type "{ctype}"'
            )
    if cert != old_cert and old_cert:
        e.forbidden("status.certificate", "updates may not modify existing certificate content")


def _preserve(new: Object, old: Object, ctype: str) -> list[str]:
    """preserveConditionInstances: the stored instances of `ctype` kept as they
    were when the write has as many; a write that adds an Approved or Denied
    one is refused (one that removes one is refused by validation)."""
    news = csr.conditions(new)
    olds = [c for c in csr.conditions(old) if c.get("type") == ctype]
    at = [i for i, c in enumerate(news) if c.get("type") == ctype]
    if len(at) > len(olds) and ctype != csr.FAILED:
        return [f'status.conditions: Forbidden: updates may not add a condition of type "{ctype}"']
    if len(at) != len(olds) or not at:
        return []
    kept = list(news)
    for i, previous in zip(at, olds, strict=True):
        kept[i] = previous
    new["status"]["conditions"] = kept
    return []


def _timestamps(new: Object, old: Object) -> None:
    """populateConditionTimestamps: lastUpdateTime now when missing;
    lastTransitionTime the stored one for an unchanged type and status, else now."""
    status = new.get("status")
    if not isinstance(status, dict) or not isinstance(status.get("conditions"), list):
        return
    now = rfc3339.now()
    olds = csr.conditions(old)
    filled = []
    for c in status["conditions"]:
        if isinstance(c, dict):
            c = dict(c)
            if not c.get("lastUpdateTime"):
                c["lastUpdateTime"] = now
            if not c.get("lastTransitionTime"):
                same = [o for o in olds if o.get("type") == c.get("type")
                        and o.get("status") == c.get("status") and o.get("lastTransitionTime")]  # fmt: skip
                c["lastTransitionTime"] = same[0]["lastTransitionTime"] if same else now
        filled.append(c)
    status["conditions"] = filled


def prepare_update(subresource: str, new: Object, old: Object) -> list[str]:
    """The CSR strategies' PrepareForUpdate (see the module docstring)."""
    if "spec" in old:
        new["spec"] = old["spec"]
    else:
        new.pop("spec", None)
    if subresource == "":
        return []
    status = new.get("status")
    new["status"] = status = dict(status) if isinstance(status, dict) else {}
    problems: list[str] = []
    if subresource == "approval":
        cert = (old.get("status") or {}).get("certificate")
        if cert:
            status["certificate"] = cert
        else:
            status.pop("certificate", None)
        problems += _preserve(new, old, csr.FAILED)
    else:
        problems += _preserve(new, old, csr.APPROVED)
        problems += _preserve(new, old, csr.DENIED)
    _timestamps(new, old)
    return problems


def condition_cell(obj: Object) -> str:
    """extractCSRStatus: Denied, Approved or Pending; then ,Failed and ,Issued."""
    types = {c.get("type") for c in csr.conditions(obj)}
    text = "Denied" if csr.DENIED in types else "Approved" if csr.APPROVED in types else "Pending"
    if csr.FAILED in types:
        text += ",Failed"
    if (obj.get("status") or {}).get("certificate"):
        text += ",Issued"
    return text


def row(obj: Object, now: float, wide: bool) -> list[str]:
    s = spec(obj)
    expiration = s.get("expirationSeconds")
    return [
        name(obj),
        age(obj, now),
        str(s.get("signerName") or "<none>"),
        str(s.get("username") or ""),
        human_duration(expiration) if isinstance(expiration, int) else "<none>",
        condition_cell(obj),
    ]


DEFINITION = KindDef(
    KindInfo(
        "CertificateSigningRequest",
        "certificates.k8s.io/v1",
        short_names=("csr",),
        namespaced=False,
    ),
    types={
        **declare(
            CERTIFICATES,
            """
            CertificateSigningRequest [certificates.k8s.io/v1 CertificateSigningRequest]: CertificateSigningRequest
                    objects provide a mechanism to obtain x509 certificates by submitting a
                    certificate signing request, and having it asynchronously approved and issued.
                spec!   CertificateSigningRequestSpec
                status  object
            CertificateSigningRequestSpec: CertificateSigningRequestSpec contains the certificate
                                           request.
                request!           string    request contains an x509 certificate signing request
                                             encoded in a "CERTIFICATE REQUEST" PEM block (base64 in
                                             JSON).
                signerName!        string    signerName indicates the requested signer, and is a
                                             qualified name.
                expirationSeconds  integer   expirationSeconds is the requested duration of validity
                                             of the issued certificate (at least 600).
                usages             []string  usages specifies a set of key usages requested in the
                                             issued certificate.
                username           string    username contains the name of the user that created the
                                             CertificateSigningRequest. Populated by the API server
                                             on creation and immutable.
                uid                string    uid contains the uid of the user that created the
                                             CertificateSigningRequest. Populated by the API server
                                             on creation and immutable.
                groups             []string  groups contains group membership of the user that
                                             created the CertificateSigningRequest. Populated by the
                                             API server on creation and immutable.
                extra              object    extra contains extra attributes of the user that
                                             created the CertificateSigningRequest. Populated by the
                                             API server on creation and immutable.
            """,
        ),
    },
    validate=validate,
    printer=Printer(
        (
            Column("NAME"),
            Column("AGE"),
            Column("SIGNERNAME", description="signerName indicates the requested signer."),
            Column("REQUESTOR", description="The user that created the request."),
            Column(
                "REQUESTEDDURATION",
                description="The requested duration of validity of the certificate.",
            ),
            Column("CONDITION", description="Conditions applied to the request."),
        ),
        row,
    ),
    patch_meta=facts(status=CONDITIONS),
    subresources=(Subresource("approval", ("get", "patch", "update")),),
    status_subresources=("approval",),
    prepare_update=prepare_update,
)
