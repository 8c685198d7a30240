"""The Endpoints controller: for each Service with a selector, its pods' addresses.

Per Service (key = the Service's key): the pods in its namespace that match
its selector and have an IP, split into ready `addresses` and
`notReadyAddresses` (pods being deleted count as not ready, or are left out
unless publishNotReadyAddresses), with the Service's ports resolved against
each pod (a named targetPort looks up the container port of that name).
Pods with the same resolved ports share a subset. Writes the Endpoints
object of the same name only when it differs; deletes it with the Service.
Services without a selector are left alone (their Endpoints are the
user's).

A pod's IP is published only where its node could have given it: inside
the node's pod CIDR(s), or, for a hostNetwork pod, one of the node's own
addresses. A node writes its pods' status (and may keep mirror pods), so
without this a node could point any Service at any address by claiming it
as a pod IP.
"""

from __future__ import annotations

import copy
import ipaddress
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.client.selectors import Selector, from_label_selector
from controlplane.client.store import object_key
from controlplane.controllers import podutil
from controlplane.controllers.base import Controller, ControllerContext


def _selector(svc: Mapping[str, Any]) -> Selector | None:
    sel = podutil.spec(svc).get("selector")
    if not sel:
        return None
    return from_label_selector({"matchLabels": dict(sel)})


def _resolve_port(pod: Mapping[str, Any], target: Any) -> int | None:
    if isinstance(target, int):
        return target
    text = str(target)
    if text.isdigit():
        return int(text)
    for c in podutil.spec(pod).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("name") == text:
                return int(p.get("containerPort", 0))
    return None


NodeLookup = Callable[[str], Mapping[str, Any] | None]
BY_NODE = "endpoints-by-node"


def _node_of(pod: Object) -> list[str]:
    node = podutil.spec(pod).get("nodeName")
    return [str(node)] if node else []


def ip_of_node(pod: Mapping[str, Any], ip: str, node: Mapping[str, Any] | None) -> bool:
    """Whether `ip` is one `pod`'s node could have given it (see the module docstring)."""
    if node is None:
        return False
    try:
        address = ipaddress.ip_address(str(ip))
    except ValueError:
        return False
    if podutil.spec(pod).get("hostNetwork"):
        return any(
            a.get("address") == str(address)
            for a in (node.get("status") or {}).get("addresses") or []
            if isinstance(a, dict) and a.get("type") in ("InternalIP", "ExternalIP")
        )
    nspec = node.get("spec") or {}
    for cidr in nspec.get("podCIDRs") or [nspec.get("podCIDR")]:
        try:
            network = ipaddress.ip_network(str(cidr), strict=False) if cidr else None
        except ValueError:
            continue
        if network is not None and address.version == network.version and address in network:
            return True
    return False


def endpoints_subsets(
    svc: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], nodes: NodeLookup | None = None
) -> list[Object]:
    """The Endpoints subsets for a Service over candidate pods (pure); with
    `nodes`, only IPs their nodes could have given them (ip_of_node)."""
    spec = podutil.spec(svc)
    publish = bool(spec.get("publishNotReadyAddresses"))
    groups: dict[tuple[tuple[str, int, str], ...], dict[str, list[Object]]] = {}
    for pod in sorted(pods, key=lambda p: podutil.name_of(p)):
        ip = podutil.status(pod).get("podIP")
        if not ip or podutil.is_terminated(pod):
            continue
        if nodes is not None and not ip_of_node(
            pod, str(ip), nodes(str(podutil.spec(pod).get("nodeName") or ""))
        ):
            continue
        if podutil.is_deleting(pod) and not publish:
            continue
        ports: list[tuple[str, int, str]] = []
        for sp in spec.get("ports") or []:
            target = sp.get("targetPort", sp.get("port"))
            number = _resolve_port(pod, target)
            if number is None:
                continue
            ports.append((str(sp.get("name", "")), number, str(sp.get("protocol", "TCP"))))
        address: Object = {
            "ip": ip,
            "targetRef": {
                "kind": "Pod",
                "name": podutil.name_of(pod),
                "namespace": podutil.namespace_of(pod),
                "uid": podutil.uid_of(pod),
            },
        }
        pspec = podutil.spec(pod)
        # A pod naming this Service as its subdomain is found by its hostname
        # (`<hostname>.<svc>.<ns>.svc`): StatefulSet pods, Volcano svc-plugin pods.
        if (
            pspec.get("hostname")
            and pspec.get("subdomain") == podutil.name_of(svc)
            and podutil.namespace_of(pod) == podutil.namespace_of(svc)
        ):
            address["hostname"] = pspec["hostname"]
        node = pspec.get("nodeName")
        if node:
            address["nodeName"] = node
        bucket = groups.setdefault(tuple(ports), {"addresses": [], "notReadyAddresses": []})
        ready = podutil.is_ready(pod) and not podutil.is_deleting(pod)
        bucket["addresses" if ready or publish else "notReadyAddresses"].append(address)
    subsets: list[Object] = []
    for ports_key, bucket in sorted(groups.items()):
        subset: Object = {}
        if bucket["addresses"]:
            subset["addresses"] = bucket["addresses"]
        if bucket["notReadyAddresses"]:
            subset["notReadyAddresses"] = bucket["notReadyAddresses"]
        port_list = []
        for name, number, proto in ports_key:
            entry: Object = {"port": number, "protocol": proto}
            if name:
                entry["name"] = name
            port_list.append(entry)
        if port_list:
            subset["ports"] = port_list
        subsets.append(subset)
    return subsets


class ServicePodsController(Controller):
    """A controller keyed by Service over the pods its selector picks: a pod's
    Services are queued when it comes, goes or changes labels (both label
    sets), and a node's pods when its facts (_node_facts) change."""

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.services = self.watch_primary("Service")
        self.pods = self.watch("Pod", {BY_NODE: _node_of})
        self.nodes = self.watch("Node")
        self.pods.add_event_handler(
            on_add=self._pod, on_update=self._pod_updated, on_delete=self._pod
        )

    def _node_facts(self, node: Object) -> tuple[Any, ...]:
        # Heartbeats change none: only a new pod CIDR or address moves an IP in or out.
        spec, status = podutil.spec(node), podutil.status(node)
        return spec.get("podCIDRs"), spec.get("podCIDR"), status.get("addresses")

    def _node_updated(self, old: Object, new: Object) -> None:
        if self._node_facts(old) != self._node_facts(new):
            self._node(new)

    def _node(self, node: Object) -> None:
        for pod in self.pods.store.by_index(BY_NODE, podutil.name_of(node)):
            self._pod(pod)

    def _node_named(self, name: str) -> Object | None:
        return self.nodes.store.get_by_key(name) if name else None

    def _pod_updated(self, old: Object, new: Object) -> None:
        self._pod(old)
        if podutil.labels_of(old) != podutil.labels_of(new):
            self._pod(new)

    def _pod(self, pod: Object) -> None:
        labels = podutil.labels_of(pod)
        for svc in self.services.store.list(podutil.namespace_of(pod)):
            sel = _selector(svc)
            if sel is not None and sel.matches(labels):
                self.enqueue(svc)


class EndpointsController(ServicePodsController):
    name = "endpoint"
    default_workers = 5

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.endpoints = self.watch("Endpoints")
        self.endpoints.add_event_handler(on_delete=self.enqueue)
        self.nodes.add_event_handler(on_add=self._node, on_update=self._node_updated,
                                     on_delete=self._node)  # fmt: skip

    def sync(self, key: str) -> float | None:
        svc = self.services.store.get_by_key(key)
        ns, _, name = key.partition("/")
        if svc is None or podutil.is_deleting(svc):
            if self.endpoints.store.get_by_key(key) is not None:
                try:
                    self.client.delete("Endpoints", name, ns)
                except errors.NotFound:
                    pass
            return None
        sel = _selector(svc)
        if sel is None:
            return None
        subsets = endpoints_subsets(svc, self.pods.store.list(ns, sel), self._node_named)
        labels = dict(podutil.labels_of(svc))
        current = self.endpoints.store.get_by_key(object_key(svc))
        if current is None:
            body: Object = {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": name, "namespace": ns, "labels": labels},
                "subsets": subsets,
            }
            try:
                self.client.create("Endpoints", body, ns)
            except errors.AlreadyExists:
                current = self.client.get("Endpoints", name, ns)
            else:
                return None
        if (current.get("subsets") or []) == subsets and dict(podutil.labels_of(current)) == labels:
            return None
        body = copy.deepcopy(current)
        body["subsets"] = subsets
        body["metadata"]["labels"] = labels
        body["metadata"].pop("resourceVersion", None)
        self.client.update("Endpoints", body)
        return None


def init(ctx: ControllerContext) -> Controller:
    return EndpointsController(ctx)
