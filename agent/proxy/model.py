"""What the service proxy reads from Services and their EndpointSlices.

Pure functions from the Kubernetes-shaped dicts (as the informers cache them)
to small frozen records: one `ServicePort` per port of a Service that has a
virtual IP, with the endpoints (`Endpoint`) that back it, matched by port
name and protocol as kube-proxy matches them. The endpoints come from a
source: `slice_source` (the Service's EndpointSlices, what the proxy uses,
with ready/serving/terminating conditions) or `endpoints_source` (the
Endpoints object, kept for comparison: bench/proxy_sync.py).
`ServicePort.cluster_endpoints`/`local_endpoints` are kube-proxy's
CategorizeEndpoints: ready endpoints, falling back to serving terminating
ones when there are none (ProxyTerminatingEndpoints). Nothing here touches
the network, the kernel or the API server, and nothing here mutates the
objects it is given.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controlplane.client import endpointslices

PROXIED_TYPES = ("ClusterIP", "NodePort", "LoadBalancer")
DEFAULT_AFFINITY_TIMEOUT = 10800


@dataclass(frozen=True, order=True)
class Endpoint:
    ip: str
    port: int
    node_name: str = ""
    ready: bool = True
    serving: bool = True
    terminating: bool = False

    @property
    def serving_terminating(self) -> bool:
        return self.serving and self.terminating


@dataclass(frozen=True)
class ServicePort:
    namespace: str
    name: str  # the Service's name
    port_name: str  # the port's name ("" for a single unnamed port)
    protocol: str  # TCP, UDP or SCTP
    cluster_ip: str
    port: int
    node_port: int  # 0 when the Service has none
    affinity_timeout: int  # seconds of ClientIP affinity; 0 = no affinity
    external_local: bool  # externalTrafficPolicy: Local
    internal_local: bool  # internalTrafficPolicy: Local
    # Ready ones and serving terminating ones, sorted, one per ip:port.
    endpoints: tuple[Endpoint, ...]
    external_ips: tuple[str, ...] = ()  # spec.externalIPs + load-balancer ingress IPs

    @property
    def cluster_endpoints(self) -> tuple[Endpoint, ...]:
        """The ready endpoints; when none is ready anywhere, the serving
        terminating ones (kube-proxy's fallback, topology not considered)."""
        ready = tuple(ep for ep in self.endpoints if ep.ready)
        if ready:
            return ready
        return tuple(ep for ep in self.endpoints if ep.serving_terminating)

    def local_endpoints(self, node_name: str) -> tuple[Endpoint, ...]:
        """This node's ready endpoints; when it has none, its serving
        terminating ones (so traffic policy Local keeps working while the
        node's pods drain, instead of dropping)."""
        local = [ep for ep in self.endpoints if ep.node_name == node_name]
        ready = tuple(ep for ep in local if ep.ready)
        if ready:
            return ready
        return tuple(ep for ep in local if ep.serving_terminating)

    @property
    def has_any_endpoints(self) -> bool:
        """A usable endpoint exists somewhere (ready, or serving terminating)."""
        return any(ep.ready or ep.serving_terminating for ep in self.endpoints)

    @property
    def key(self) -> str:
        """`ns/name:port` (kube-proxy's ServicePortName) — stable chain identity."""
        suffix = f":{self.port_name}" if self.port_name else ""
        return f"{self.namespace}/{self.name}{suffix}"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


@functools.lru_cache(maxsize=1 << 16)  # the same addresses come back every sync
def is_ipv4(text: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(text), ipaddress.IPv4Address)
    except ValueError:
        return False


def cluster_ip(svc: Mapping[str, Any]) -> str:
    """The Service's IPv4 virtual IP, or "" (headless, ExternalName, unallocated)."""
    spec = _spec(svc)
    if spec.get("type", "ClusterIP") not in PROXIED_TYPES:
        return ""
    ip = str(spec.get("clusterIP") or "")
    return ip if is_ipv4(ip) else ""


def affinity_timeout(svc: Mapping[str, Any]) -> int:
    spec = _spec(svc)
    if spec.get("sessionAffinity") != "ClientIP":
        return 0
    cfg = spec.get("sessionAffinityConfig") or {}
    timeout = ((cfg.get("clientIP") or {}) if isinstance(cfg, Mapping) else {}).get(
        "timeoutSeconds"
    )
    try:
        value = int(timeout) if timeout is not None else DEFAULT_AFFINITY_TIMEOUT
    except (TypeError, ValueError):
        value = DEFAULT_AFFINITY_TIMEOUT
    return max(1, value)


def external_ips(svc: Mapping[str, Any]) -> tuple[str, ...]:
    """IPv4 externalIPs and status.loadBalancer.ingress IPs, sorted, distinct."""
    found = {str(ip) for ip in _spec(svc).get("externalIPs") or [] if is_ipv4(str(ip))}
    status = svc.get("status")
    lb = status.get("loadBalancer") if isinstance(status, Mapping) else None
    for ingress in (lb.get("ingress") if isinstance(lb, Mapping) else None) or []:
        if isinstance(ingress, Mapping) and is_ipv4(str(ingress.get("ip") or "")):
            found.add(str(ingress["ip"]))
    return tuple(sorted(found))


def endpoints_for(
    endpoints: Mapping[str, Any] | None,
    port_name: str,
    protocol: str,
    include_not_ready: bool = False,
) -> tuple[Endpoint, ...]:
    """The (sorted, distinct) endpoints of one Service port from its Endpoints
    object: every subset port with the same name and protocol."""
    if not endpoints:
        return ()
    found: set[Endpoint] = set()
    for subset in endpoints.get("subsets") or []:
        if not isinstance(subset, Mapping):
            continue
        numbers = [
            int(p["port"])
            for p in subset.get("ports") or []
            if isinstance(p, Mapping)
            and str(p.get("name") or "") == port_name
            and str(p.get("protocol") or "TCP") == protocol
            and isinstance(p.get("port"), int)
        ]
        groups: list[tuple[str, bool]] = [("addresses", True)]
        if include_not_ready:
            groups.append(("notReadyAddresses", False))
        for field, ready in groups:
            for addr in subset.get(field) or []:
                if not isinstance(addr, Mapping):
                    continue
                ip = str(addr.get("ip") or "")
                if not is_ipv4(ip):
                    continue
                for number in numbers:
                    found.add(Endpoint(ip, number, str(addr.get("nodeName") or ""), ready))
    return tuple(sorted(found))


# (namespace, service name, port name, protocol) -> that port's endpoints
EndpointSource = Callable[[str, str, str, str], tuple[Endpoint, ...]]


def endpoints_source(endpoints: Mapping[str, Mapping[str, Any]]) -> EndpointSource:
    """Endpoints objects by `ns/name` as the source (ready addresses only)."""

    def lookup(ns: str, name: str, port_name: str, protocol: str) -> tuple[Endpoint, ...]:
        return endpoints_for(endpoints.get(f"{ns}/{name}"), port_name, protocol)

    return lookup


def endpoints_from_slices(
    slices: Sequence[Mapping[str, Any]], port_name: str, protocol: str
) -> tuple[Endpoint, ...]:
    """The usable endpoints (ready, or serving and terminating) of one Service
    port from the Service's slices, sorted, one per ip:port (a ready copy
    wins over a not-ready one, a local copy over a remote one: kube-proxy
    favours the local one too)."""
    found: dict[tuple[str, int], Endpoint] = {}
    for s in slices:  # inlined endpointslices.endpoints: this runs on every sync
        if not endpointslices.usable(s):
            continue
        numbers = endpointslices.port_numbers(s, port_name, protocol)
        if not numbers:
            continue
        for item in s.get("endpoints") or ():
            addresses = item.get("addresses") if isinstance(item, dict) else None
            if not isinstance(addresses, list) or not addresses:
                continue
            cond = item.get("conditions")
            cond = cond if isinstance(cond, dict) else {}
            ready = endpointslices.flag(cond, "ready", True)
            serving = endpointslices.flag(cond, "serving", True)
            terminating = endpointslices.flag(cond, "terminating", False)
            ip = str(addresses[0])
            if not (ready or (serving and terminating)) or not is_ipv4(ip):
                continue
            node = str(item.get("nodeName") or "")
            for number in numbers:
                old = found.get((ip, number))
                if old is None or (ready and not old.ready) or (node and not old.node_name):
                    found[(ip, number)] = Endpoint(ip, number, node, ready, serving, terminating)
    return tuple(sorted(found.values()))


def slice_source(slices_by_service: Mapping[str, Sequence[Mapping[str, Any]]]) -> EndpointSource:
    """EndpointSlices grouped by `ns/<service>` (endpointslices.group_by_service)
    as the source."""

    def lookup(ns: str, name: str, port_name: str, protocol: str) -> tuple[Endpoint, ...]:
        slices = slices_by_service.get(f"{ns}/{name}")
        return endpoints_from_slices(slices, port_name, protocol) if slices else ()

    return lookup


def service_ports(
    services: Iterable[Mapping[str, Any]],
    source: EndpointSource,
) -> list[ServicePort]:
    """Every proxied port of every Service with an IPv4 cluster IP, sorted by
    key, with its endpoints from `source`."""
    out: list[ServicePort] = []
    for svc in services:
        ip = cluster_ip(svc)
        if not ip:
            continue
        meta, spec = _meta(svc), _spec(svc)
        ns, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        if not name or meta.get("deletionTimestamp"):
            continue
        node_ports = spec.get("type") in ("NodePort", "LoadBalancer")
        for port in spec.get("ports") or []:
            if not isinstance(port, Mapping) or not isinstance(port.get("port"), int):
                continue
            port_name = str(port.get("name") or "")
            protocol = str(port.get("protocol") or "TCP")
            if protocol not in ("TCP", "UDP", "SCTP"):
                continue
            node_port = port.get("nodePort") if node_ports else 0
            out.append(
                ServicePort(
                    namespace=ns,
                    name=name,
                    port_name=port_name,
                    protocol=protocol,
                    cluster_ip=ip,
                    port=int(port["port"]),
                    node_port=int(node_port) if isinstance(node_port, int) else 0,
                    affinity_timeout=affinity_timeout(svc),
                    external_local=spec.get("externalTrafficPolicy") == "Local",
                    internal_local=spec.get("internalTrafficPolicy") == "Local",
                    endpoints=source(ns, name, port_name, protocol),
                    external_ips=external_ips(svc),
                )
            )
    out.sort(key=lambda sp: (sp.key, sp.protocol))
    return out
