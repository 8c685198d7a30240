"""The node authorizer and NodeRestriction: what a node's credential may do.

Kubernetes' semantics, as its Node authorizer and NodeRestriction admission
plugin have them:

- Reads: its own Lease and its own CSINode; the pods bound to it (a List or Watch of pods must
  carry the field selector `spec.nodeName=<node>`); the Secrets, ConfigMaps,
  PersistentVolumeClaims (and their PersistentVolumes) and ServiceAccounts
  those pods reference (`NodeGraph`), and a List or Watch of one such Secret
  or ConfigMap (field selector `metadata.name=<name>`, as the kubelet
  watches each one its pods use); Services, Endpoints and EndpointSlices
  (the service proxy's inputs); the Secrets an Ingress names in spec.tls
  (every node serves the built-in ingress controller; `get` only). The
  NetworkPolicy enforcer's and the ingress controller's cluster-wide reads
  (every pod, namespaces, policies, ingresses) are RBAC's, granted to the
  group system:nodes by the ClusterRole system:skiff-network. Nodes: every
  node may read every Node,
  because skiff's agent is also the network plugin and routes to its peers'
  pod CIDRs (Kubernetes grants the same to flannel's ServiceAccount).
- Writes: its own Node (never setting or changing spec.podCIDR(s) or taints
  after registration, nor status addresses the API server would dial that
  are not its own (node_addresses.py: loopback, the Service range, the API
  server's, another node's), nor an agent port outside 1-65535, nor labels
  under node-role.kubernetes.io/,
  node-restriction.kubernetes.io/ or any other kubernetes.io/ and k8s.io/
  label outside the kubelet's own set), its own Lease, its own CSINode
  (create, update, patch, delete, as Kubernetes' node authorizer), the status of (and
  the deletion of) pods bound to it, mirror pods of its static pods (bound to
  itself, the mirror annotation, its Node, with its uid, as their one and
  controlling owner, no Secret,
  ConfigMap, PVC or ServiceAccount reference, and labels that no Service in
  the namespace selects), Events about its own Node and pods, and the
  metadata (not labels) of the local-path PersistentVolumes pinned to it.
- PersistentVolumes: a node gets those its pods' claims are bound to, and
  lists or watches only with the label selector
  `storage.skiff.io/local-path-node=<node>` (the local-path volumes pinned
  to it, which its agent provisions; the PV controller sets the label).

`refusal(...)` returns why a request is refused, or None when it is allowed;
it never raises, writes, or reads storage except through `lookup` (the
Services of a namespace, for a mirror pod's create).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from controlplane.api import volumes
from controlplane.api.dnsnames import is_dns_subdomain
from controlplane.api.kinds import KindInfo
from controlplane.api.pod_references import pod_references
from controlplane.api.selectors import FieldSelector, LabelSelector
from controlplane.apiserver.nodegraph import NodeGraph

NODE_LEASE_NAMESPACE = "kube-node-lease"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"

READ_VERBS = frozenset({"get", "list", "watch", "get_scale"})
STATUS_VERBS = frozenset({"update_status", "patch_status"})
WRITE_VERBS = frozenset({"update", "patch"})

# Labels a kubelet may set on its own Node (Kubernetes' kubeletapis.KubeletLabels).
KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch",
    "beta.kubernetes.io/os", "beta.kubernetes.io/arch", "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type", "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
})  # fmt: skip
KUBELET_LABEL_DOMAINS = ("kubelet.kubernetes.io", "node.kubernetes.io")
PROXY_KINDS = frozenset({"Service", "Endpoints", "EndpointSlice"})
REFERENCED_KINDS = frozenset(
    {"Secret", "ConfigMap", "PersistentVolumeClaim", "PersistentVolume", "ServiceAccount"}
)
# Referenced kinds a node may also list and watch, one object at a time.
WATCHED_KINDS = frozenset({"Secret", "ConfigMap"})

# (kind, namespace) -> the objects of that kind in the namespace.
Lookup = Callable[[str, str], list[dict[str, Any]]]
# (node, ip) -> why the node may not claim that address (node_addresses.py), or None.
AddressCheck = Callable[[str, ipaddress.IPv4Address | ipaddress.IPv6Address], str | None]
IP_ADDRESS_TYPES = frozenset({"InternalIP", "ExternalIP"})


def _status_addresses(
    node: str, old: dict[str, Any] | None, new: dict[str, Any] | None, check: AddressCheck | None
) -> str | None:
    """Why the addresses and agent port in `new`'s status may not be written
    (only what changed is checked): the API server dials them."""
    status, old_status = (new or {}).get("status") or {}, (old or {}).get("status") or {}
    endpoint = (status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}
    if endpoint != ((old_status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}):
        port = endpoint.get("Port", endpoint.get("port"))
        if port is not None and (isinstance(port, bool) or not isinstance(port, int)
                                 or not 0 < port < 65536):  # fmt: skip
            return (f'node "{node}" may not set status.daemonEndpoints.kubeletEndpoint.Port '
                    f"{port!r}: must be a port number (1-65535)")  # fmt: skip
    addresses = status.get("addresses") or []
    if addresses == (old_status.get("addresses") or []):
        return None
    if not isinstance(addresses, list):
        return f'node "{node}" may not set status.addresses: must be a list'
    for i, entry in enumerate(addresses):
        where = f'node "{node}" may not set status.addresses[{i}]'
        kind = entry.get("type") if isinstance(entry, dict) else None
        value = str(entry.get("address") or "") if isinstance(entry, dict) else ""
        if kind in IP_ADDRESS_TYPES:
            try:
                ip = ipaddress.ip_address(value)
            except ValueError:
                return f"{where}: {kind} {value!r} is not an IP address"
            problem = check(node, ip) if check is not None else None
            if problem:
                return f"{where}: {ip} is {problem}" if problem.startswith(("an ", "in ")) \
                    else f"{where}: {ip}: {problem}"  # fmt: skip
        elif not is_dns_subdomain(value):
            return f"{where}: {kind} {value!r} is not a DNS name"
    return None


def forbidden_label(key: str) -> bool:
    """Whether a node may not set, change or remove label `key` on itself."""
    prefix, slash, _ = key.partition("/")
    if not slash or key in KUBELET_LABELS:
        return False
    if prefix in ("node-role.kubernetes.io", "node-restriction.kubernetes.io"):
        return True
    if any(prefix == d or prefix.endswith("." + d) for d in KUBELET_LABEL_DOMAINS):
        return False
    return prefix in ("kubernetes.io", "k8s.io") or prefix.endswith((".kubernetes.io", ".k8s.io"))


def _meta(obj: dict[str, Any] | None) -> dict[str, Any]:
    return (obj or {}).get("metadata") or {}


def _spec(obj: dict[str, Any] | None) -> dict[str, Any]:
    return (obj or {}).get("spec") or {}


def _bound(obj: dict[str, Any] | None) -> str:
    return str(_spec(obj).get("nodeName") or "")


def _protected_labels(obj: dict[str, Any] | None) -> dict[str, Any]:
    labels = _meta(obj).get("labels") or {}
    return {k: v for k, v in labels.items() if forbidden_label(k)}


def _node_write(
    node: str, verb: str, name: str, old: dict[str, Any] | None, new: dict[str, Any] | None,
    check: AddressCheck | None = None,
) -> str | None:  # fmt: skip
    if name != node:
        return f'node "{node}" may not {verb} node "{name}": only its own Node'
    if new is None or verb == "delete":
        return None
    problem = _status_addresses(node, old, new, check)
    if problem is not None or verb in STATUS_VERBS:
        return problem
    spec, old_spec = _spec(new), _spec(old)
    if verb == "create":
        if spec.get("podCIDR") or spec.get("podCIDRs"):
            return f'node "{node}" may not set its spec.podCIDR: node IPAM assigns it'
        bad = sorted(_protected_labels(new))
        if bad:
            return f'node "{node}" may not set the labels {", ".join(bad)}'
        return None
    for field in ("podCIDR", "podCIDRs"):
        if spec.get(field) != old_spec.get(field):
            return f'node "{node}" may not change its spec.{field}'
    if (spec.get("taints") or []) != (old_spec.get("taints") or []):
        return f'node "{node}" may not modify its taints'
    old_labels, new_labels = _protected_labels(old), _protected_labels(new)
    if old_labels != new_labels:
        changed = sorted(set(old_labels.items()) ^ set(new_labels.items()))
        keys = ", ".join(sorted({k for k, _ in changed}))
        return f'node "{node}" may not modify the labels {keys}'
    return None


def _mirror_pod_create(
    node: str, namespace: str, name: str, pod: dict[str, Any] | None, lookup: Lookup | None
) -> str | None:
    where = f"pod {namespace}/{name}"
    meta = _meta(pod)
    if MIRROR_ANNOTATION not in (meta.get("annotations") or {}):
        return f'node "{node}" may not create {where}: a node creates only mirror pods'
    bound = _bound(pod)
    if bound != node:
        return f'node "{node}" may not create {where} bound to "{bound}": only pods bound to itself'
    # Exactly one owner, its Node, as the controller (Kubernetes' NodeRestriction):
    # no workload controller then adopts it (their adoption skips controlled pods).
    refs = meta.get("ownerReferences") or []
    if not refs:
        return f'node "{node}" can only create pods with an owner reference set to itself'
    if len(refs) > 1:
        return f'node "{node}" can only create pods with a single owner reference set to itself'
    ref = refs[0]
    if not (
        isinstance(ref, dict)
        and ref.get("kind") == "Node"
        and ref.get("apiVersion") == "v1"
        and ref.get("name") == node
    ):
        return f'node "{node}" can only create pods with an owner reference set to itself'
    if ref.get("controller") is not True:
        return f'node "{node}" can only create pods with a controller owner reference set to itself'
    if lookup is not None:
        mine = next((n for n in lookup("Node", "") if _meta(n).get("name") == node), None)
        uid = _meta(mine).get("uid")
        if mine is None or ref.get("uid") != uid:
            return (f'the UID in the owner reference ({ref.get("uid")}) does not match the '
                    f'current UID of node "{node}" ({uid})')  # fmt: skip
    kinds = sorted({kind for kind, _, _ in pod_references(pod or {})})
    if kinds:
        return (
            f'node "{node}" may not create {where}: a mirror pod may not reference '
            f"{', '.join(kinds)} objects"
        )
    labels = meta.get("labels") or {}
    if labels and lookup is not None:
        for service in lookup("Service", namespace):
            selector = _spec(service).get("selector") or {}
            if selector and all(labels.get(k) == v for k, v in selector.items()):
                return (
                    f'node "{node}" may not create {where}: its labels match Service '
                    f"{namespace}/{_meta(service).get('name')} (a mirror pod may not join "
                    "a Service)"
                )
    return None


def _pod_write(
    node: str,
    verb: str,
    namespace: str,
    name: str,
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    lookup: Lookup | None,
) -> str | None:
    if verb == "create":
        return _mirror_pod_create(node, namespace, name, new, lookup)
    if verb in STATUS_VERBS or verb == "delete":
        bound = _bound(old)
        if bound == node:
            return None
        what = "modify" if verb in STATUS_VERBS else "delete"
        return f'node "{node}" may not {what} pod {namespace}/{name} bound to "{bound}"'
    return f'node "{node}" may not {verb} pod {namespace}/{name}: only its status'


def _ingress_certificate(lookup: Lookup | None, namespace: str, name: str) -> bool:
    """Whether an Ingress of the namespace names Secret `name` in spec.tls:
    every node serves the built-in ingress, so it reads the certificates."""
    if lookup is None:
        return False
    for ing in lookup("Ingress", namespace):
        for tls in _spec(ing).get("tls") or []:
            if isinstance(tls, dict) and tls.get("secretName") == name:
                return True
    return False


def _about_own(graph: NodeGraph | None, node: str, event: dict[str, Any] | None) -> bool:
    involved = (event or {}).get("involvedObject") or {}
    kind, name = involved.get("kind"), str(involved.get("name") or "")
    if kind == "Node":
        return name == node
    if kind == "Pod" and graph is not None:
        ns = str(involved.get("namespace") or _meta(event).get("namespace") or "")
        return graph.pod_on(node, ns, name)
    return False


def _volume_read(
    graph: NodeGraph | None, node: str, verb: str, name: str, labels: LabelSelector | None
) -> str | None:
    if verb in ("list", "watch"):
        # The agent is also the local-path provisioner's node half: it watches
        # the volumes pinned to it, and no other.
        wanted = volumes.LOCAL_PATH_NODE_LABEL
        if labels is not None and any(
            r.key == wanted and r.op in ("=", "in") and r.values == (node,)
            for r in labels.requirements
        ):
            return None
        return (
            f'node "{node}" may {verb} persistentvolumes only with the label selector '
            f"{wanted}={node}"
        )
    if graph is not None and graph.may_read(node, "PersistentVolume", "", name):
        return None
    return (
        f'node "{node}" may not get persistentvolumes {name!r}: no claim of a pod bound to '
        "it is bound to it"
    )


def refusal(
    graph: NodeGraph | None,
    node: str,
    verb: str,
    info: KindInfo,
    namespace: str,
    name: str,
    old: dict[str, Any] | None = None,
    new: dict[str, Any] | None = None,
    fields: FieldSelector | None = None,
    lookup: Lookup | None = None,
    addresses: AddressCheck | None = None,
    labels: LabelSelector | None = None,
) -> str | None:
    """Why node `node` may not do this (None: it may). See the module docstring."""
    kind = info.kind
    where = f" in namespace {namespace!r}" if namespace else ""
    if verb in READ_VERBS:
        if kind == "Node" or kind in PROXY_KINDS:
            return None
        if kind == "PersistentVolume":
            return _volume_read(graph, node, verb, name, labels)
        if kind == "Lease" and namespace == NODE_LEASE_NAMESPACE and name == node:
            return None
        if kind == "CSINode" and verb == "get" and name == node:
            return None
        if kind == "Pod":
            if verb in ("list", "watch"):
                if fields is not None and fields.value_of("spec.nodeName") == node:
                    return None
                return (
                    f'node "{node}" may {verb} only its own pods (field selector '
                    f"spec.nodeName={node})"
                )
            if graph is not None and graph.pod_on(node, namespace, name):
                return None
            return f'node "{node}" may not read pod {namespace}/{name}: not bound to it'
        if kind in REFERENCED_KINDS and verb == "get":
            if graph is not None and graph.may_read(node, kind, namespace, name):
                return None
            if kind == "Secret" and _ingress_certificate(lookup, namespace, name):
                return None
            return (
                f'node "{node}" may not get {info.plural} {name!r}{where}: no pod bound to '
                "it references it"
            )
        if kind in WATCHED_KINDS and verb in ("list", "watch"):
            # One object at a time, named by the field selector (Kubernetes
            # takes a List's or Watch's name from metadata.name=): the
            # kubelet watches each Secret and ConfigMap its pods use.
            pinned = fields.value_of("metadata.name") if fields is not None else None
            if pinned and namespace and graph is not None:
                if graph.may_read(node, kind, namespace, pinned):
                    return None
                return (
                    f'node "{node}" may not {verb} {info.plural} {pinned!r}{where}: no pod '
                    "bound to it references it"
                )
            return (
                f'node "{node}" may {verb} {info.plural} only one at a time, in its namespace '
                "(field selector metadata.name=<name>)"
            )
        return f'node "{node}" may not {verb} {info.plural}{where}'
    if kind == "Node":
        return _node_write(node, verb, name, old, new, addresses)
    if kind == "Lease":
        if namespace == NODE_LEASE_NAMESPACE and name == node:
            return None
        return f'node "{node}" may not {verb} lease {namespace}/{name}: only its own Lease'
    if kind == "Pod":
        return _pod_write(node, verb, namespace, name, old, new, lookup)
    if kind == "CSINode":  # Kubernetes' node authorizer: its own CSINode only
        if name == node and verb in ("create", "update", "patch", "delete"):
            return None
        return f'node "{node}" may not {verb} csinode {name!r}: only its own CSINode'

    if kind == "ServiceAccount" and verb == "create" and (new or {}).get("kind") == "TokenRequest":
        # serviceaccounts/token: only for an account its pods use, bound to such a pod.
        bound = (_spec(new).get("boundObjectRef") or {}) if new else {}
        if (
            graph is not None
            and graph.may_read(node, "ServiceAccount", namespace, name)
            and bound.get("kind") == "Pod"
            and graph.pod_on(node, namespace, str(bound.get("name") or ""))
        ):
            return None
        return (
            f'node "{node}" may not request a token of serviceaccount {namespace}/{name}: only '
            "for the accounts of its own pods, bound to such a pod"
        )
    if kind == "PersistentVolume" and verb in WRITE_VERBS:
        # The local-path volumes pinned to it, spec unchanged (annotations and
        # its cleanup finalizer); `new` is None on the check before the change.
        if new is None and volumes.local_path_node_writable(old, old, node):
            return None
        if volumes.local_path_node_writable(old, new, node):
            return None
        return (
            f'node "{node}" may not {verb} persistentvolume {name!r}: only the metadata of '
            "local-path volumes pinned to it"
        )
    if kind in ("TokenReview", "SubjectAccessReview") and verb == "create":
        return None  # a node checks its own callers (Kubernetes' webhook authn/authz)
    if kind == "Event" and verb in ("create", "update", "patch"):
        if verb != "create" and not _about_own(graph, node, old):
            return f'node "{node}" may not {verb} event {namespace}/{name}: not about its objects'
        if new is not None and not _about_own(graph, node, new):
            return f'node "{node}" may not {verb} event {namespace}/{name}: not about its objects'
        return None
    return f'node "{node}" may not {verb} {info.plural} {name!r}{where}'
