"""ServiceLB: LoadBalancer Services served by the nodes themselves (k3s' ServiceLB).

k3s runs a DaemonSet of klipper-lb pods per LoadBalancer Service, each
taking the Service's ports as hostPorts and forwarding them; skiff's agents
already answer `<load-balancer address>:<port>` in their service proxy (a
load-balancer ingress IP is one more external IP there), so no pod is
needed: this controller only decides and writes the addresses.

Per LoadBalancer Service (key = the Service's key), as k3s decides it:

- a Service whose `spec.loadBalancerClass` is set to another class is left
  alone (its own controller writes its status); unset or `skiff.io/servicelb`
  is ours;
- the nodes that serve it: Ready, not labelled
  `node.kubernetes.io/exclude-from-external-load-balancers`, and, once any
  node carries k3s' `svccontroller.k3s.cattle.io/enablelb` label, only
  those labelled "true"; with `externalTrafficPolicy: Local` only the nodes
  with a ready endpoint in the Service's EndpointSlices (traffic then stays on the node, the
  client's address kept);
- their ExternalIPs if any eligible node has one, else their InternalIPs,
  sorted, become `status.loadBalancer.ingress` (Normal
  `UpdatedLoadBalancer`; Warning `UnAvailableLoadBalancer` when none);
- a port (number and protocol) is one per cluster, as a hostPort is one per
  node: a Service asking for a port that an older LoadBalancer Service holds,
  or that is another Service's nodePort, gets no address and a Warning
  `PortConflict` naming the holder, and gets its addresses once the port is
  free.

A Service that stops being one of our LoadBalancers has the addresses we
gave it cleared: those of a Service we served since this controller started,
or addresses that are all nodes' (after a restart). Another writer's status
on any other Service is never touched. This module never touches the
network; `lb_ingress` is pure.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from controlplane.client import endpointslices
from controlplane.client.interface import Object
from controlplane.client.store import object_key
from controlplane.controllers import podutil
from controlplane.controllers.base import Controller, ControllerContext

CLASS = "skiff.io/servicelb"
EXCLUDE_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
ENABLE_LABEL = "svccontroller.k3s.cattle.io/enablelb"


def is_ours(svc: Mapping[str, Any]) -> bool:
    spec = podutil.spec(svc)
    return spec.get("type") == "LoadBalancer" and spec.get("loadBalancerClass") in (None, CLASS)


def _ports(svc: Mapping[str, Any]) -> list[tuple[int, str]]:
    out = []
    for p in podutil.spec(svc).get("ports") or []:
        if isinstance(p, Mapping) and isinstance(p.get("port"), int):
            out.append((int(p["port"]), str(p.get("protocol") or "TCP")))
    return out


def _age(svc: Mapping[str, Any]) -> tuple[str, str]:
    return (str(podutil.meta(svc).get("creationTimestamp") or ""), object_key(svc))


def port_conflict(svc: Mapping[str, Any], services: Iterable[Mapping[str, Any]]) -> str:
    """Why `svc` may not have its ports ("" when it may)."""
    mine = set(_ports(svc))
    me = object_key(svc)
    for other in sorted(services, key=_age):
        if object_key(other) == me or podutil.is_deleting(other):
            continue
        spec = podutil.spec(other)
        name = object_key(other)
        for p in spec.get("ports") or []:
            if not isinstance(p, Mapping):
                continue
            proto = str(p.get("protocol") or "TCP")
            node_port = p.get("nodePort")
            if isinstance(node_port, int) and (node_port, proto) in mine:
                return f"port {node_port}/{proto} is the nodePort of Service {name}"
        if is_ours(other) and _age(other) < _age(svc):
            for port, proto in _ports(other):
                if (port, proto) in mine:
                    return f"port {port}/{proto} is already used by LoadBalancer Service {name}"
    return ""


def _ready(node: Mapping[str, Any]) -> bool:
    conds = podutil.status(node).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def _local_nodes(slices: Iterable[Mapping[str, Any]]) -> set[str]:
    """The nodes with a ready endpoint in the Service's EndpointSlices."""
    return {e.node_name for e in endpointslices.endpoints(slices) if e.ready and e.node_name}


def lb_ingress(
    svc: Mapping[str, Any],
    nodes: Iterable[Mapping[str, Any]],
    slices: Iterable[Mapping[str, Any]],
) -> list[dict[str, str]]:
    """The Service's `status.loadBalancer.ingress` (see the module docstring)."""
    node_list = list(nodes)
    pooled = any(ENABLE_LABEL in podutil.labels_of(n) for n in node_list)
    local = podutil.spec(svc).get("externalTrafficPolicy") == "Local"
    with_endpoints = _local_nodes(slices) if local else set()
    external: set[str] = set()
    internal: set[str] = set()
    for node in node_list:
        labels = podutil.labels_of(node)
        if not _ready(node) or EXCLUDE_LABEL in labels:
            continue
        if pooled and labels.get(ENABLE_LABEL) != "true":
            continue
        if local and podutil.name_of(node) not in with_endpoints:
            continue
        for addr in podutil.status(node).get("addresses") or []:
            if addr.get("type") == "ExternalIP":
                external.add(str(addr.get("address")))
            elif addr.get("type") == "InternalIP":
                internal.add(str(addr.get("address")))
    chosen = external or internal
    return [{"ip": ip} for ip in sorted(chosen, key=_ip_key)]


def _ip_key(ip: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in ip.split("."))
    except ValueError:
        return (1 << 30,)


class ServiceLBController(Controller):
    name = "servicelb"
    default_workers = 2

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.services = self.watch_primary("Service")
        self.nodes = self.watch("Node")
        self.slices = self.watch(
            "EndpointSlice", {endpointslices.SERVICE_INDEX: endpointslices.service_index}
        )
        self._conflicts: dict[str, str] = {}  # key -> the conflict last reported
        self._served: set[str] = set()  # keys of the Services given addresses
        every = lambda *_: self._all()  # noqa: E731
        self.nodes.add_event_handler(on_add=every, on_update=self._node_updated, on_delete=every)
        self.slices.add_event_handler(
            on_add=self._slice, on_update=lambda o, n: self._slice(n), on_delete=self._slice,
        )  # fmt: skip
        # A Service's ports or deletion can free or take another's port.
        self.services.add_event_handler(
            on_update=lambda o, n: self._all() if _ports(o) != _ports(n) else None,
            on_delete=lambda o: self._all(),
        )

    def _all(self) -> None:
        for svc in self.services.store.list():
            if podutil.spec(svc).get("type") == "LoadBalancer":
                self.enqueue(svc)

    def _node_updated(self, old: Object, new: Object) -> None:
        if (
            _ready(old) != _ready(new)
            or podutil.labels_of(old) != podutil.labels_of(new)
            or podutil.status(old).get("addresses") != podutil.status(new).get("addresses")
        ):
            self._all()

    def _slice(self, slice_: Object) -> None:
        key = endpointslices.service_of(slice_)
        svc = self.services.store.get_by_key(key) if key else None
        if svc is not None and podutil.spec(svc).get("externalTrafficPolicy") == "Local":
            self.enqueue(svc)

    def sync(self, key: str) -> float | None:
        svc = self.services.store.get_by_key(key)
        if svc is None or podutil.is_deleting(svc):
            self._conflicts.pop(key, None)
            return None
        status = podutil.status(svc)
        previous = (status.get("loadBalancer") or {}).get("ingress") or []
        if not is_ours(svc):
            if previous and self._gave(key, previous):  # no longer ours: our addresses go
                self._write(svc, [])
            self._served.discard(key)
            return None
        self._served.add(key)
        conflict = port_conflict(svc, self.services.store.list())
        if conflict and self._conflicts.get(key) != conflict:
            self.recorder.event(
                svc,
                "Warning",
                "PortConflict",
                f"{conflict}; no node serves this Service until it is free",
            )
        if conflict:
            self._conflicts[key] = conflict
            ingress: list[dict[str, str]] = []
        else:
            self._conflicts.pop(key, None)
            slices = self.slices.store.by_index(endpointslices.SERVICE_INDEX, key)
            ingress = lb_ingress(svc, self.nodes.store.list(), slices)
        if ingress == previous:
            return None
        self._write(svc, ingress)
        before = [i.get("ip") or i.get("hostname") for i in previous]
        if ingress:
            after = [i["ip"] for i in ingress]
            self.recorder.event(
                svc,
                "Normal",
                "UpdatedLoadBalancer",
                f"Updated LoadBalancer with new IPs: {before} -> {after}",
            )
        elif not conflict:
            self.recorder.event(
                svc,
                "Warning",
                "UnAvailableLoadBalancer",
                "There are no available nodes for LoadBalancer",
            )
        return None

    def _gave(self, key: str, ingress: list[dict[str, Any]]) -> bool:
        """Whether these addresses are ours: the Service was served here, or
        every address is a node's (this controller restarted since)."""
        if key in self._served:
            return True
        nodes = {str(a.get("address")) for n in self.nodes.store.list()
                 for a in podutil.status(n).get("addresses") or []}  # fmt: skip
        return all(i.get("ip") in nodes for i in ingress)

    def _write(self, svc: Object, ingress: list[dict[str, str]]) -> None:
        status = copy.deepcopy(dict(podutil.status(svc)))
        status["loadBalancer"] = {"ingress": ingress} if ingress else {}
        self.write_status("Service", svc, status)


def init(ctx: ControllerContext) -> Controller:
    return ServiceLBController(ctx)
