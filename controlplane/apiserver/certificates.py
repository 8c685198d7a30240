"""What the API server does for CertificateSigningRequests beyond the kind's
own rules (controlplane/api/kinds/certificates/certificatesigningrequest.py).

- `requester(obj, identity)`: the CSR strategy's PrepareForCreate: the
  request's spec.username, uid, groups and extra are the caller's, whatever
  it sent (a signer and an approver trust them), and no status is taken.
- `CertificateAdmission`: kube-apiserver's three CSR admission plugins, as a
  validating plugin of the registry:
  CertificateApproval (a write of the approval subresource needs the verb
  `approve` on `signers` in certificates.k8s.io, named by the signerName or
  `<domain>/*`), CertificateSigning (a status write that changes the
  certificate needs `sign` there) and CertificateSubjectRestriction
  (kubernetes.io/kube-apiserver-client never signs for system:masters).
  Their messages and 403s are Kubernetes'.
"""

from __future__ import annotations

from typing import Any

from controlplane.api import csr
from controlplane.api.rbac import Attributes as RbacAttributes
from controlplane.apiserver.admission_context import CREATE, UPDATE, Attributes
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.authz import Authorizer
from controlplane.client.errors import Forbidden

KIND = "CertificateSigningRequest"
GROUP = "certificates.k8s.io"
RESOURCE = "certificatesigningrequests.certificates.k8s.io"


def requester(obj: dict[str, Any], identity: Identity) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return  # validation refuses it
    spec["username"] = identity.user
    spec["groups"] = list(identity.groups)
    if identity.uid:
        spec["uid"] = identity.uid
    else:
        spec.pop("uid", None)
    if identity.extra:
        spec["extra"] = {key: list(values) for key, values in identity.extra}
    else:
        spec.pop("extra", None)
    obj.pop("status", None)


def _certificate(obj: dict[str, Any] | None) -> Any:
    return ((obj or {}).get("status") or {}).get("certificate")


class CertificateAdmission:
    """See the module docstring."""

    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer

    def authorized_for_signer(self, identity: Identity, verb: str, signer: str) -> bool:
        """IsAuthorizedForSignerName: the verb on the signer's name, or on its domain's `/*`."""
        if self.authorizer.allows(identity, RbacAttributes(verb, GROUP, "signers", "", "", signer)):
            return True
        domain = signer.split("/", 1)[0]
        return self.authorizer.allows(
            identity, RbacAttributes(verb, GROUP, "signers", "", "", f"{domain}/*")
        )

    def __call__(self, attrs: Attributes) -> None:
        if attrs.kind != KIND:
            return
        signer = str((attrs.obj.get("spec") or {}).get("signerName") or "")
        forbidden = f'{RESOURCE} "{attrs.name}" is forbidden: '
        if attrs.operation == UPDATE and attrs.subresource == "approval":
            if not self.authorized_for_signer(attrs.identity, "approve", signer):
                raise Forbidden(
                    forbidden + f'user not permitted to approve requests with signerName "{signer}"'
                )
        elif attrs.operation == UPDATE and attrs.subresource == "status":
            if _certificate(attrs.obj) != _certificate(attrs.old) and not (
                self.authorized_for_signer(attrs.identity, "sign", signer)
            ):
                raise Forbidden(
                    forbidden + f'user not permitted to sign requests with signerName "{signer}"'
                )
        elif attrs.operation == CREATE and signer == csr.KUBE_APISERVER_CLIENT:
            try:
                request = csr.parse_request(csr.request_pem(attrs.obj.get("spec")))
            except csr.RequestError:
                return  # validation said so already
            if csr.MASTERS_GROUP in csr.subject(request)[1]:
                raise Forbidden(forbidden + f"use of {csr.KUBE_APISERVER_CLIENT} signer with "
                                f"{csr.MASTERS_GROUP} group is not allowed")  # fmt: skip
