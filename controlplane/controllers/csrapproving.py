"""The CSR approving controller: kubelet client certificates approved by
SubjectAccessReview (kube-controller-manager's csrapproving, sarapprove.go),
kubelet serving certificates for the Node's own addresses.

A pending CertificateSigningRequest for kubernetes.io/kube-apiserver-client-kubelet
whose request passes that signer's rules (system:node:NAME in system:nodes,
no SANs, client usages) is approved when its requester may:

- renew its own (the requester is the node the request names):
  `create certificatesigningrequests/selfnodeclient`, granted to system:nodes
  by the ClusterRole system:certificates.k8s.io:certificatesigningrequests:selfnodeclient;
- ask for a node's first one: `create certificatesigningrequests/nodeclient`,
  granted to system:bootstrappers by ...:nodeclient.

Each check is a SubjectAccessReview for the requester as the request records
it (spec.username, groups, uid, extra).

A kubernetes.io/kubelet-serving request that passes that signer's rules is
approved (skiff's rule: kube-controller-manager approves none, k3s signs
them itself) when the node asks for itself (requester system:node:NAME in
system:nodes, the subject's) and every name it asks for is its Node's: DNS
names its name or its Hostname/InternalDNS/ExternalDNS addresses, IPs its
InternalIP/ExternalIP addresses and no other Node's. This is the rule of
the approvers several distributions run beside serverTLSBootstrap
(kubelet-csr-approver, OpenShift's machine approver): agents renew without
a person, and a node still gets no certificate for a name it does not
already answer to in the API (claiming another node's IP is refused).

Anything else stays pending for a person to approve or deny. Approval writes the Approved condition through
the approval subresource (reason AutoApproved, Kubernetes' messages); the
csrsigning controller then signs it.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable, Iterable
from typing import Any

from controlplane.api import csr
from controlplane.client import errors
from controlplane.controllers.base import Controller, ControllerContext
from machinery import rfc3339
from machinery.x509read import Names

log = logging.getLogger(__name__)

KIND = "CertificateSigningRequest"
SELF = (
    "selfnodeclient",
    "Auto approving self kubelet client certificate after SubjectAccessReview.",
)
FIRST = ("nodeclient", "Auto approving kubelet client certificate after SubjectAccessReview.")
SERVING = "Auto approving kubelet serving certificate: its names are the Node's addresses."
NODE_RETRY = 5.0  # seconds: a serving request whose Node is not in the cache yet
DNS_TYPES = ("Hostname", "InternalDNS", "ExternalDNS")
IP_TYPES = ("InternalIP", "ExternalIP")


def serving_verdict(
    spec: dict[str, Any],
    request: Names,
    node_of: Callable[[str], dict[str, Any] | None],
    nodes: Callable[[], Iterable[dict[str, Any]]] = lambda: (),
) -> str | None:
    """Why a kubelet-serving request is not approved ("" : approve it; None:
    its Node is not known yet). Approved only from the node itself (the
    requester is system:node:NAME in system:nodes, the subject's name) for
    names that are its Node's: DNS names its name or its Hostname/DNS
    addresses, IPs its InternalIP/ExternalIP addresses and no other Node's
    (a node writes its own status: it could claim another's address)."""
    cn = csr.subject(request)[0]
    if spec.get("username") != cn or csr.NODES_GROUP not in (spec.get("groups") or []):
        return f"requested by {spec.get('username')!r}, not the node {cn!r} itself"
    name = cn[len(csr.NODE_PREFIX) :]
    node = node_of(name)
    if node is None:
        return None
    addresses = ((node.get("status") or {}).get("addresses")) or []
    dns = {name} | {a.get("address") for a in addresses if a.get("type") in DNS_TYPES}
    ips = set()
    for a in addresses:
        if a.get("type") in IP_TYPES:
            try:
                ips.add(ipaddress.ip_address(str(a.get("address"))))
            except ValueError:
                continue
    for value in request.dns:
        if value not in dns:
            return f"DNS name {value!r} is not an address of Node {name!r}"
    requested = request.ips
    for ip in requested:
        if ip not in ips:
            return f"IP address {ip} is not an address of Node {name!r}"
    for other in nodes():
        other_name = (other.get("metadata") or {}).get("name")
        if other_name == name:
            continue
        for a in ((other.get("status") or {}).get("addresses")) or []:
            if a.get("type") in IP_TYPES and str(a.get("address")) in {str(i) for i in requested}:
                return f"IP address {a.get('address')} is also an address of Node {other_name!r}"
    return ""


class CsrApprovingController(Controller):
    name = "csrapproving"
    default_workers = 2

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.requests = self.watch_primary(KIND)
        self.nodes = self.watch("Node")  # serving requests' names against their Node's

    def sync(self, key: str) -> float | None:
        obj = self.requests.store.get(key)
        if obj is None or csr.conditions(obj):  # approved, denied or failed already
            return None
        spec: Any = obj.get("spec") or {}
        signer = spec.get("signerName")
        if signer not in (csr.KUBE_APISERVER_CLIENT_KUBELET, csr.KUBELET_SERVING):
            return None
        try:
            request = csr.parse_request(csr.request_pem(spec))
        except csr.RequestError:
            return None
        usages = [str(u) for u in spec.get("usages") or []]
        if csr.signer_problem(signer, request, usages):
            return None
        cn = csr.subject(request)[0]
        if signer == csr.KUBELET_SERVING:
            verdict = serving_verdict(spec, request, self.nodes.store.get, self.nodes.store.list)
            if verdict is None:
                return NODE_RETRY  # its Node not seen yet
            if verdict:
                log.info("csr=%s left pending: %s", key, verdict)
                return None
            message = SERVING
        else:
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
