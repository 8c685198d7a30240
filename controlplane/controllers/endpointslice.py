"""The EndpointSlice controller: for each Service with a selector, its pods
as EndpointSlices (discovery.k8s.io/v1), beside the Endpoints the endpoint
controller keeps.

Per Service (key = the Service's key), as Kubernetes' endpointslice
controller: every pod matching the selector that has an IP its node could
have given it (endpoints.ip_of_node) and has not finished, one endpoint
each, with conditions `serving` (the pod is Ready), `terminating` (it is
being deleted) and `ready` (serving and not terminating, or the Service
publishes not-ready addresses), its nodeName, the zone of its node
(topology.kubernetes.io/zone), a targetRef to the pod and a hostname where
the pod names the Service as its subdomain. Pods being deleted stay in the
slices (terminating) until they are gone, which kube-proxy uses for
externalTrafficPolicy: Local. Ports are the Service's, resolved against each
pod (pods with a different resolution get their own slices); one address
type per IP family of the Service (IPv4 by default). At most
`MAX_ENDPOINTS_PER_SLICE` (100, kube-controller-manager's
--max-endpoints-per-slice) endpoints per slice, planned by slicesync.plan.
Slices are named `<service>-<random>`, labelled kubernetes.io/service-name
and endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io
(plus the Service's own labels) and owned by the Service, so the garbage
collector removes them with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controlplane.client import errors
from controlplane.client.informer import SharedInformer
from controlplane.client.interface import Object
from controlplane.controllers import podutil
from controlplane.controllers.base import Controller, ControllerContext
from controlplane.controllers.endpoints import (
    NodeLookup,
    ServicePodsController,
    _resolve_port,
    _selector,
    ip_of_node,
)
from controlplane.controllers.slicesync import (
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
    GroupKey,
    Owner,
    Plan,
    plan,
    ports_key,
)

CONTROLLER_NAME = "endpointslice-controller.k8s.io"
MAX_ENDPOINTS_PER_SLICE = 100
ZONE_LABEL = "topology.kubernetes.io/zone"
HEADLESS_LABEL = "service.kubernetes.io/headless"
BY_SERVICE = "endpointslices-by-service"
PENDING_RETRY = 0.2  # seconds before looking again while our own creates reach the cache


def _family(ip: str) -> str:
    return "IPv6" if ":" in ip else "IPv4"


def _pod_ips(pod: Mapping[str, Any]) -> list[str]:
    status = podutil.status(pod)
    ips = [str(p.get("ip")) for p in status.get("podIPs") or [] if isinstance(p, Mapping)]
    primary = status.get("podIP")
    if primary and str(primary) not in ips:
        ips.insert(0, str(primary))
    return [ip for ip in ips if ip]


def service_address_types(svc: Mapping[str, Any]) -> list[str]:
    families = [str(f) for f in podutil.spec(svc).get("ipFamilies") or []]
    return [f for f in families if f in ("IPv4", "IPv6")] or ["IPv4"]


def pod_endpoint(svc: Mapping[str, Any], pod: Mapping[str, Any], ip: str,
                 node: Mapping[str, Any] | None) -> Object:  # fmt: skip
    """Kubernetes' podToEndpoint."""
    serving = podutil.is_ready(pod)
    terminating = podutil.is_deleting(pod)
    publish = bool(podutil.spec(svc).get("publishNotReadyAddresses"))
    endpoint: Object = {
        "addresses": [ip],
        "conditions": {
            "ready": publish or (serving and not terminating),
            "serving": serving,
            "terminating": terminating,
        },
        "targetRef": {
            "kind": "Pod",
            "namespace": podutil.namespace_of(pod),
            "name": podutil.name_of(pod),
            "uid": podutil.uid_of(pod),
        },
    }
    pspec = podutil.spec(pod)
    if pspec.get("hostname") and pspec.get("subdomain") == podutil.name_of(svc):
        endpoint["hostname"] = pspec["hostname"]
    if pspec.get("nodeName"):
        endpoint["nodeName"] = pspec["nodeName"]
    zone = podutil.labels_of(node).get(ZONE_LABEL) if node is not None else None
    if zone:
        endpoint["zone"] = zone
    return endpoint


def pod_ports(svc: Mapping[str, Any], pod: Mapping[str, Any]) -> list[Object]:
    ports: list[Object] = []
    for sp in podutil.spec(svc).get("ports") or []:
        number = _resolve_port(pod, sp.get("targetPort", sp.get("port")))
        if number is None:
            continue
        port: Object = {
            "name": str(sp.get("name") or ""),
            "port": number,
            "protocol": str(sp.get("protocol") or "TCP"),
        }
        if sp.get("appProtocol"):
            port["appProtocol"] = sp["appProtocol"]
        ports.append(port)
    return ports


def desired_endpoints(
    svc: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], nodes: NodeLookup | None = None
) -> dict[GroupKey, list[Object]]:
    """The endpoints of a Service per address type and port set (pure); with
    `nodes`, only IPs the pods' nodes could have given them."""
    types = service_address_types(svc)
    groups: dict[GroupKey, list[Object]] = {}
    for pod in sorted(pods, key=podutil.name_of):
        if podutil.is_terminated(pod):
            continue
        node_name = str(podutil.spec(pod).get("nodeName") or "")
        node = nodes(node_name) if nodes is not None and node_name else None
        ports = ports_key(pod_ports(svc, pod))
        for ip in _pod_ips(pod):
            if _family(ip) not in types:
                continue
            if nodes is not None and not ip_of_node(pod, ip, node):
                continue
            groups.setdefault((_family(ip), ports), []).append(pod_endpoint(svc, pod, ip, node))
    return groups


def service_of_slice(managed_by: str) -> Callable[[Object], list[str]]:
    def index(obj: Object) -> list[str]:
        labels = podutil.labels_of(obj)
        service = labels.get(SERVICE_NAME_LABEL)
        if not service or labels.get(MANAGED_BY_LABEL) != managed_by:
            return []
        return [f"{podutil.namespace_of(obj)}/{service}"]

    return index


class SliceWriter:
    """Applies a slicesync.Plan and remembers the slices it created until the
    informer has them, so a sync never plans against a cache that misses
    its own writes (Kubernetes' endpointSliceTracker)."""

    def __init__(self, controller: Controller, informer: SharedInformer, index: str) -> None:
        self.controller = controller
        self.informer = informer
        self.index = index
        self._lock = threading.Lock()
        self._created: dict[str, set[str]] = {}  # owner key -> names created, not yet seen

    def existing(self, key: str) -> list[Object] | None:
        """The owner's slices in the cache, or None while a creation of ours
        is missing from it."""
        found = self.informer.store.by_index(self.index, key)
        names = {podutil.name_of(s) for s in found}
        with self._lock:
            pending = self._created.get(key, set()) - names
            if pending:
                self._created[key] = pending
                return None
            self._created.pop(key, None)
        return found

    def apply(self, key: str, namespace: str, todo: Plan) -> None:
        client = self.controller.client
        for body in todo.delete:
            try:
                client.delete("EndpointSlice", podutil.name_of(body), namespace)
            except errors.NotFound:
                pass
        for body in todo.update:
            body["metadata"].pop("resourceVersion", None)
            client.update("EndpointSlice", body)
        for body in todo.create:
            made = client.create("EndpointSlice", body, namespace)
            with self._lock:
                self._created.setdefault(key, set()).add(podutil.name_of(made))


class EndpointSliceController(ServicePodsController):
    name = "endpointslice"
    default_workers = 5

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.slices = self.watch("EndpointSlice", {BY_SERVICE: service_of_slice(CONTROLLER_NAME)})
        self.writer = SliceWriter(self, self.slices, BY_SERVICE)
        self.follow(self.slices, self._slice, self._slice)
        self.nodes.add_event_handler(on_update=self._node_updated)

    def _slice(self, obj: Object) -> None:
        for key in service_of_slice(CONTROLLER_NAME)(obj):
            self.enqueue_key(key)

    def _node_facts(self, node: Object) -> tuple[Any, ...]:
        # A node's zone, pod CIDRs or addresses move its pods' endpoints.
        return podutil.labels_of(node).get(ZONE_LABEL), *super()._node_facts(node)

    def sync(self, key: str) -> float | None:
        ns, _, name = key.partition("/")
        svc = self.services.store.get_by_key(key)
        existing = self.writer.existing(key)
        if existing is None:
            return PENDING_RETRY
        sel = _selector(svc) if svc is not None else None
        if svc is None or podutil.is_deleting(svc) or sel is None:
            # Gone, or no selector (its Endpoints are the user's; the
            # mirroring controller makes their slices): ours go.
            self.writer.apply(key, ns, Plan(delete=list(existing)))
            return None
        desired = desired_endpoints(svc, self.pods.store.list(ns, sel), self._node_named)
        labels = {k: v for k, v in podutil.labels_of(svc).items()
                  if k not in (SERVICE_NAME_LABEL, MANAGED_BY_LABEL)}  # fmt: skip
        if podutil.spec(svc).get("clusterIP") == "None":
            labels[HEADLESS_LABEL] = ""
        labels[SERVICE_NAME_LABEL] = name
        labels[MANAGED_BY_LABEL] = CONTROLLER_NAME
        owner = Owner(ns, f"{name}-", labels, podutil.owner_ref(
            {"apiVersion": "v1", "kind": "Service", **svc}))  # fmt: skip
        todo = plan(owner, existing, desired, MAX_ENDPOINTS_PER_SLICE,
                    placeholder=service_address_types(svc)[0])  # fmt: skip
        self.writer.apply(key, ns, todo)
        return None


def init(ctx: ControllerContext) -> Controller:
    return EndpointSliceController(ctx)
