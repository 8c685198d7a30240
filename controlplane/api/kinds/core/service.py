"""Service (v1); its name is a DNS-1123 label.

- Validation: type, ports (number, protocol, targetPort number or name,
  nodePort only for NodePort/LoadBalancer and in 30000-32767, names
  required when several and unique, no duplicate port/protocol), selector
  labels, clusterIP an IP and immutable, sessionAffinity.
- Defaults: type ClusterIP, sessionAffinity None, traffic policies Cluster,
  allocateLoadBalancerNodePorts true for a LoadBalancer, port protocol TCP
  and targetPort = port.
- Admission: a clusterIP from the service CIDR and nodePorts for NodePort /
  LoadBalancer services (none for a LoadBalancer with
  allocateLoadBalancerNodePorts false), and a healthCheckNodePort for a
  LoadBalancer with externalTrafficPolicy Local, allocated uniquely (under a
  lock; the allocator reads the existing Services, so it needs no state of
  its own).
- Columns: NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE; wide adds SELECTOR.
"""

from __future__ import annotations

import ipaddress
import threading
from typing import Any

from controlplane.api.checks import Errors, each_object, enum, integer, items, label_map, mapping
from controlplane.api.display import NONE, age, labels_string, name, spec, status
from controlplane.api.dnsnames import is_dns_label
from controlplane.api.kinds.definition import AdmissionApi, KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.fill import child, listed
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, facts, merge
from controlplane.api.schema import CORE, declare
from controlplane.client.errors import Forbidden, Invalid

Object = dict[str, Any]

NODE_PORT_RANGE = (30000, 32767)

# ---- validation -----------------------------------------------------------------------


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    svc_spec: Any = obj.get("spec")
    if not mapping(e, "spec", svc_spec, required=True):
        return
    stype: Any = svc_spec.get("type")
    enum(e, "spec.type", stype, ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"))
    if stype == "ExternalName":
        if not svc_spec.get("externalName"):
            e.add("spec.externalName", "required for type ExternalName")
        return
    ports: Any = svc_spec.get("ports")
    headless: Any = svc_spec.get("clusterIP") == "None"
    if items(e, "spec.ports", ports, required=not headless):
        names: set[str] = set()
        seen: set[tuple[Any, Any]] = set()
        for path, port in each_object(e, "spec.ports", ports, required=True):
            if port.get("port") is None:
                e.add(f"{path}.port", "required")
            else:
                integer(e, f"{path}.port", port.get("port"), 1, 65535)
            enum(e, f"{path}.protocol", port.get("protocol"), ("TCP", "UDP", "SCTP"))
            target: Any = port.get("targetPort")
            if isinstance(target, str):
                if not is_dns_label(target) or len(target) > 15:
                    e.add(f"{path}.targetPort", f"{target!r} must be a port number or a port name")
            else:
                integer(e, f"{path}.targetPort", target, 1, 65535)
            node_port: Any = port.get("nodePort")
            if node_port is not None:
                if stype not in ("NodePort", "LoadBalancer"):
                    e.add(f"{path}.nodePort", "may only be set for type NodePort or LoadBalancer")
                else:
                    integer(e, f"{path}.nodePort", node_port, 30000, 32767)
            pname: Any = port.get("name")
            if len(ports) > 1 and not pname:
                e.add(f"{path}.name", "required when there is more than one port")
            if pname:
                if not isinstance(pname, str) or not is_dns_label(pname):
                    e.add(f"{path}.name", f"{pname!r} must be a DNS-1123 label")
                elif pname in names:
                    e.add(f"{path}.name", f"duplicate port name {pname!r}")
                names.add(str(pname))
            key = (port.get("port"), port.get("protocol"))
            if key in seen:
                e.add(f"{path}", f"duplicate port {key[0]}/{key[1]}")
            seen.add(key)
    if "selector" in svc_spec:
        label_map(e, "spec.selector", svc_spec["selector"])
    cluster_ip: Any = svc_spec.get("clusterIP")
    if cluster_ip and cluster_ip != "None":
        try:
            ipaddress.ip_address(cluster_ip)
        except ValueError:
            e.add("spec.clusterIP", f"{cluster_ip!r} is not a valid IP address")
    enum(e, "spec.sessionAffinity", svc_spec.get("sessionAffinity"), ("None", "ClientIP"))
    if old is not None:
        old_ip = (old.get("spec") or {}).get("clusterIP")
        # An update without a clusterIP keeps the allocated one (admission
        # copies it, as kube-apiserver's patchAllocatedValues): a server-side
        # apply that no longer owns the field must not drop it.
        if old_ip and cluster_ip and cluster_ip != old_ip and stype != "ExternalName":
            e.add("spec.clusterIP", "field is immutable")


# ---- defaults -------------------------------------------------------------------------


def defaults(obj: Object) -> None:
    svc_spec = child(obj, "spec")
    svc_spec.setdefault("type", "ClusterIP")
    if svc_spec["type"] == "ExternalName":
        return
    svc_spec.setdefault("sessionAffinity", "None")
    svc_spec.setdefault("internalTrafficPolicy", "Cluster")
    if svc_spec["type"] in ("NodePort", "LoadBalancer"):
        svc_spec.setdefault("externalTrafficPolicy", "Cluster")
    if svc_spec["type"] == "LoadBalancer":
        svc_spec.setdefault("allocateLoadBalancerNodePorts", True)
    for port in listed(svc_spec.get("ports")):
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "port" in port:
                port.setdefault("targetPort", port["port"])


# ---- admission: cluster IPs and node ports --------------------------------------------


class Allocator:
    """Cluster IPs and node ports, unique across existing Services."""

    def __init__(self, cidr: str = "10.43.0.0/16") -> None:
        self.network = ipaddress.ip_network(cidr)
        self._lock = threading.Lock()

    @staticmethod
    def _in_use(api: AdmissionApi, skip_uid: str) -> tuple[set[str], set[int]]:
        ips: set[str] = set()
        ports: set[int] = set()
        for svc in api.cached_objects("Service"):
            if svc.get("metadata", {}).get("uid") == skip_uid:
                continue
            svc_spec = svc.get("spec") or {}
            if svc_spec.get("clusterIP") and svc_spec["clusterIP"] != "None":
                ips.add(svc_spec["clusterIP"])
            for port in svc_spec.get("ports") or []:
                if port.get("nodePort"):
                    ports.add(int(port["nodePort"]))
            if svc_spec.get("healthCheckNodePort"):
                ports.add(int(svc_spec["healthCheckNodePort"]))
        return ips, ports

    def admit(self, api: AdmissionApi, obj: Object, old: Object | None) -> None:
        svc_spec: dict[str, Any] = obj.setdefault("spec", {})
        if svc_spec.get("type") == "ExternalName":
            return
        with self._lock:
            ips, node_ports = self._in_use(api, str(obj["metadata"].get("uid", "")))
            ip = svc_spec.get("clusterIP")
            old_ip = ((old or {}).get("spec") or {}).get("clusterIP")
            if not ip:
                svc_spec["clusterIP"] = old_ip if old_ip else self._next_ip(ips)
            elif ip != "None" and ip != old_ip:
                if ipaddress.ip_address(ip) not in self.network:
                    raise Invalid(
                        f"spec.clusterIP: {ip} is not in the service range {self.network}"
                    )
                if ip in ips:
                    raise Invalid(f"spec.clusterIP: provided IP {ip} is already allocated")
            if svc_spec.get("clusterIP") and svc_spec["clusterIP"] != "None":
                svc_spec["clusterIPs"] = [svc_spec["clusterIP"]]
            if svc_spec.get("type") in ("NodePort", "LoadBalancer"):
                old_spec = (old or {}).get("spec") or {}
                old_ports = {
                    (p.get("port"), p.get("protocol")): p.get("nodePort")
                    for p in old_spec.get("ports") or []
                }
                # allocateLoadBalancerNodePorts: false keeps LoadBalancer
                # Services without node ports unless asked for (or kept).
                allocate = svc_spec.get("type") == "NodePort" or svc_spec.get(
                    "allocateLoadBalancerNodePorts", True
                )
                for i, port in enumerate(svc_spec.get("ports") or []):
                    wanted = port.get("nodePort")
                    previous = old_ports.get((port.get("port"), port.get("protocol")))
                    if wanted is None:
                        if not (allocate or previous):
                            continue
                        port["nodePort"] = previous or self._next_port(node_ports)
                    elif wanted != previous and wanted in node_ports:
                        raise Invalid(
                            f"spec.ports[{i}].nodePort: provided port {wanted} is already allocated"
                        )
                    node_ports.add(int(port["nodePort"]))
                self._health_check_port(svc_spec, old_spec, node_ports)
            else:
                svc_spec.pop("healthCheckNodePort", None)

    def _health_check_port(
        self, svc_spec: dict[str, Any], old_spec: dict[str, Any], used: set[int]
    ) -> None:
        """A LoadBalancer Service with externalTrafficPolicy Local gets a
        healthCheckNodePort (kube-proxy answers there how many local
        endpoints the node has); others have none."""
        if not (
            svc_spec.get("type") == "LoadBalancer"
            and svc_spec.get("externalTrafficPolicy") == "Local"
        ):
            svc_spec.pop("healthCheckNodePort", None)
            return
        wanted, previous = svc_spec.get("healthCheckNodePort"), old_spec.get("healthCheckNodePort")
        if wanted is None:
            svc_spec["healthCheckNodePort"] = previous or self._next_port(used)
        elif wanted != previous and wanted in used:
            raise Invalid(f"spec.healthCheckNodePort: provided port {wanted} is already allocated")

    def _next_ip(self, used: set[str]) -> str:
        # .1 is kept for the cluster's own service, as Kubernetes does.
        for offset, host in enumerate(self.network.hosts()):
            if offset == 0:
                continue
            if str(host) not in used:
                return str(host)
        raise Forbidden(f"the service IP range {self.network} is full")

    @staticmethod
    def _next_port(used: set[int]) -> int:
        for port in range(NODE_PORT_RANGE[0], NODE_PORT_RANGE[1] + 1):
            if port not in used:
                return port
        raise Forbidden("the node port range is full")


_allocators: dict[str, Allocator] = {}  # by service CIDR, made at the first Service write
_allocators_lock = threading.Lock()


def admit(api: AdmissionApi, info: KindInfo, obj: Object, old: Object | None) -> None:
    with _allocators_lock:
        allocator = _allocators.get(api.service_cidr)
        if allocator is None:
            allocator = _allocators[api.service_cidr] = Allocator(api.service_cidr)
    allocator.admit(api, obj, old)


# ---- columns --------------------------------------------------------------------------


def _ports(svc: Object) -> str:
    parts = []
    for p in spec(svc).get("ports") or []:
        port = f"{p.get('port')}"
        if p.get("nodePort"):
            port += f":{p['nodePort']}"
        parts.append(f"{port}/{p.get('protocol', 'TCP')}")
    return ",".join(parts) or NONE


def row(obj: Object, now: float, wide: bool) -> list[str]:
    sp = spec(obj)
    external = sp.get("externalIPs") or [
        i.get("ip") or i.get("hostname")
        for i in (status(obj).get("loadBalancer") or {}).get("ingress") or []
    ]
    svc_type = str(sp.get("type", "ClusterIP"))
    if not external:
        ext = "<pending>" if svc_type == "LoadBalancer" else NONE
    else:
        ext = ",".join(str(e) for e in external)
    cells = [name(obj), svc_type, str(sp.get("clusterIP") or NONE), ext, _ports(obj), age(obj, now)]
    if wide:
        cells.append(labels_string(sp.get("selector")))
    return cells


DEFINITION = KindDef(
    KindInfo("Service", "v1", short_names=("svc",), categories=("all",)),
    types={
        **declare(
            CORE,
            """
            Service [v1 Service]: Service is a named abstraction of software service consisting of a
                                  port the proxy listens on and the selector that determines which
                                  pods answer.
                spec    ServiceSpec
                status  object
            ServiceSpec: ServiceSpec describes the attributes that a user creates on a service.
                ports                          []ServicePort  The list of ports exposed by this
                                                              service.
                selector                       map            Route traffic to pods with labels
                                                              matching this selector.
                clusterIP                      string         The IP address of the service.
                clusterIPs                     []string       The IP addresses of the service.
                type                           string         ClusterIP, NodePort, LoadBalancer or
                                                              ExternalName.
                externalIPs                    []string       IPs for which nodes also accept
                                                              traffic for this service.
                sessionAffinity                string         ClientIP or None.
                loadBalancerIP                 string         Deprecated.
                loadBalancerSourceRanges       []string       Client IP ranges a load balancer
                                                              accepts.
                externalName                   string         The DNS name an ExternalName service
                                                              aliases.
                externalTrafficPolicy          string         Cluster or Local.
                healthCheckNodePort            integer        Health check node port of a
                                                              LoadBalancer service.
                publishNotReadyAddresses       boolean        Publish addresses of pods that are not
                                                              ready.
                sessionAffinityConfig          object         Configuration of session affinity.
                ipFamilies                     []string       IPv4 and/or IPv6.
                ipFamilyPolicy                 string         SingleStack, PreferDualStack or
                                                              RequireDualStack.
                allocateLoadBalancerNodePorts  boolean        Allocate node ports for a LoadBalancer
                                                              service.
                loadBalancerClass              string         The class of the load balancer
                                                              implementation.
                internalTrafficPolicy          string         Cluster or Local.
                trafficDistribution            string         How traffic is distributed to
                                                              endpoints.
            ServicePort: ServicePort contains information on service's port.
                name         string         The name of this port within the service.
                protocol     string         TCP, UDP or SCTP. Defaults to TCP.
                appProtocol  string         The application protocol for this port.
                port!        integer        The port exposed by this service.
                targetPort   int-or-string  Number or name of the port to access on the pods.
                nodePort     integer        The port on each node (NodePort, LoadBalancer).
            """,
        ),
    },
    defaults=defaults,
    initial_status={"loadBalancer": {}},  # the zero status's fields Kubernetes always writes
    validate=validate,
    name_rule="label",
    admit=admit,
    printer=Printer(
        columns(("NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"), ("SELECTOR",)),
        row,
    ),
    patch_meta=facts(status=CONDITIONS, extra={"spec.ports": merge("port")}),
)
