"""The CSR approving controller: kubelet client certificates approved by
SubjectAccessReview (kube-controller-manager's csrapproving, sarapprove.go).

A pending CertificateSigningRequest for kubernetes.io/kube-apiserver-client-kubelet
whose request passes that signer's rules (system:node:NAME in system:nodes,
no SANs, client usages) is approved when its requester may:

- renew its own (the requester is the node the request names):
  `create certificatesigningrequests/selfnodeclient`, granted to system:nodes
  by the ClusterRole system:certificates.k8s.io:certificatesigningrequests:selfnodeclient;
- ask for a node's first one: `create certificatesigningrequests/nodeclient`,
  granted to system:bootstrappers by ...:nodeclient.

Each check is a SubjectAccessReview for the requester as the request records
it (spec.username, groups, uid, extra). Anything else stays pending for a
person to approve or deny. Approval writes the Approved condition through
the approval subresource (reason AutoApproved, Kubernetes' messages); the
csrsigning controller then signs it.
"""

from __future__ import annotations

import logging
from typing import Any

from controlplane.api import csr
from controlplane.client import errors
from controlplane.controllers.base import Controller, ControllerContext
from machinery import rfc3339

log = logging.getLogger(__name__)

KIND = "CertificateSigningRequest"
SELF = (
    "selfnodeclient",
    "Auto approving self kubelet client certificate after SubjectAccessReview.",
)
FIRST = ("nodeclient", "Auto approving kubelet client certificate after SubjectAccessReview.")


class CsrApprovingController(Controller):
    name = "csrapproving"
    default_workers = 2

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.requests = self.watch_primary(KIND)

    def sync(self, key: str) -> float | None:
        obj = self.requests.store.get(key)
        if obj is None or csr.conditions(obj):  # approved, denied or failed already
            return None
        spec: Any = obj.get("spec") or {}
        if spec.get("signerName") != csr.KUBE_APISERVER_CLIENT_KUBELET:
            return None
        try:
            request = csr.parse_request(csr.request_pem(spec))
        except csr.RequestError:
            return None
        usages = [str(u) for u in spec.get("usages") or []]
        if csr.signer_problem(csr.KUBE_APISERVER_CLIENT_KUBELET, request, usages):
            return None
        cn = csr.subject(request)[0]
        subresource, message = SELF if spec.get("username") == cn else FIRST
        if not self._allowed(spec, subresource):
            return None
        now = rfc3339.now()
        approved = {"type": csr.APPROVED, "status": "True", "reason": "AutoApproved",
                    "message": message, "lastUpdateTime": now, "lastTransitionTime": now}  # fmt: skip
        # At the version read: a request changed since is looked at again.
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        patch = {"metadata": {"resourceVersion": rv}, "status": {"conditions": [approved]}}
        try:
            self.client.patch(KIND, key, patch, subresource="approval")
        except errors.NotFound:
            pass
        return None

    def _allowed(self, spec: dict[str, Any], subresource: str) -> bool:
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": spec.get("username") or "",
                "groups": spec.get("groups") or [],
                "uid": spec.get("uid") or "",
                "extra": spec.get("extra") or {},
                "resourceAttributes": {
                    "group": "certificates.k8s.io", "resource": "certificatesigningrequests",
                    "verb": "create", "subresource": subresource,
                },
            },
        }  # fmt: skip
        answer = self.client.create("SubjectAccessReview", review)
        return bool((answer.get("status") or {}).get("allowed"))


def init(ctx: ControllerContext) -> Controller:
    return CsrApprovingController(ctx)
