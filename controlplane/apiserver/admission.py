"""Kind-specific admission: what the Kubernetes API server does beyond defaults.

- Pod: on create, status starts as Pending with its QoS class; the priority
  comes from spec.priorityClassName (or the global default PriorityClass).
- Service: a clusterIP from the service CIDR and nodePorts for NodePort /
  LoadBalancer services, allocated uniquely (under a lock; the allocator scans
  existing Services, so it needs no state of its own).
- Job: the generated selector and pod labels (batch.kubernetes.io/controller-uid).
- Secret: stringData folded into base64 data.

Each hook gets the registry, the kind, the object being written (mutable)
and the stored object (None on create); it raises API errors.
"""

from __future__ import annotations

import base64
import ipaddress
import threading
from typing import Any

from controlplane.api import kinds
from controlplane.api.kinds import KindInfo
from controlplane.api.qos import qos_class
from controlplane.apiserver import admission_volcano, serviceaccounts, storage_admission
from controlplane.apiserver.codec import Object, decode
from controlplane.apiserver.registry import Admit, Registry
from controlplane.client.errors import Forbidden, Invalid, NotFound

SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}

NODE_PORT_RANGE = (30000, 32767)


def admit_pod(registry: Registry, info: KindInfo, obj: Object, old: Object | None) -> None:
    if old is not None:
        return
    serviceaccounts.admit(obj)
    spec = obj.setdefault("spec", {})
    obj["status"] = {"phase": "Pending", "qosClass": str(qos_class(obj))}
    class_name = spec.get("priorityClassName")
    value: int | None = None
    policy: str | None = None
    if class_name:
        if class_name in SYSTEM_PRIORITY_CLASSES:
            value = SYSTEM_PRIORITY_CLASSES[class_name]
        try:
            pc = registry.get_object("PriorityClass", str(class_name))
            value, policy = int(pc.get("value", 0)), pc.get("preemptionPolicy")
        except NotFound as err:
            if value is None:
                raise Forbidden(f"no PriorityClass with name {class_name} was found") from err
    else:
        for pc in registry.cached_objects("PriorityClass"):
            if pc.get("globalDefault"):
                spec["priorityClassName"] = pc["metadata"]["name"]
                value, policy = int(pc.get("value", 0)), pc.get("preemptionPolicy")
                break
    if value is None:
        value = 0
    if spec.get("priority") is not None and spec["priority"] != value:
        raise Forbidden(
            "the integer value of priority "
            f"({spec['priority']}) must not be provided in pod spec; priority admission "
            f"controller computed {value} from the given PriorityClass name"
        )
    spec["priority"] = value
    if policy:
        spec.setdefault("preemptionPolicy", policy)


def admit_priorityclass(
    registry: Registry, info: KindInfo, obj: Object, old: Object | None
) -> None:
    if not obj.get("globalDefault"):
        return
    name = obj.get("metadata", {}).get("name")
    for item, rev in registry.list("PriorityClass").items:
        pc = decode(item, rev)
        if pc.get("globalDefault") and pc["metadata"]["name"] != name:
            raise Invalid(
                f"globalDefault: PriorityClass {pc['metadata']['name']} is already "
                "marked as default; only one default can exist"
            )


def admit_job(registry: Registry, info: KindInfo, obj: Object, old: Object | None) -> None:
    if old is not None:
        return
    spec = obj.setdefault("spec", {})
    if spec.get("manualSelector"):
        return
    meta = obj["metadata"]
    uid, name = meta["uid"], meta["name"]
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    template = spec.setdefault("template", {})
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    labels.update(
        {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
        }
    )


def admit_secret(registry: Registry, info: KindInfo, obj: Object, old: Object | None) -> None:
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict):
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


class ServiceAllocator:
    """Cluster IPs and node ports, unique across existing Services."""

    def __init__(self, cidr: str = "10.43.0.0/16") -> None:
        self.network = ipaddress.ip_network(cidr)
        self._lock = threading.Lock()

    def _in_use(self, registry: Registry, skip_uid: str) -> tuple[set[str], set[int]]:
        ips: set[str] = set()
        ports: set[int] = set()
        for item, _ in registry.list("Service").items:
            svc = decode(item)
            if svc.get("metadata", {}).get("uid") == skip_uid:
                continue
            spec = svc.get("spec") or {}
            if spec.get("clusterIP") and spec["clusterIP"] != "None":
                ips.add(spec["clusterIP"])
            for port in spec.get("ports") or []:
                if port.get("nodePort"):
                    ports.add(int(port["nodePort"]))
            if spec.get("healthCheckNodePort"):
                ports.add(int(spec["healthCheckNodePort"]))
        return ips, ports

    def admit(self, registry: Registry, info: KindInfo, obj: Object, old: Object | None) -> None:
        spec: dict[str, Any] = obj.setdefault("spec", {})
        if spec.get("type") == "ExternalName":
            return
        with self._lock:
            ips, node_ports = self._in_use(registry, str(obj["metadata"].get("uid", "")))
            ip = spec.get("clusterIP")
            old_ip = ((old or {}).get("spec") or {}).get("clusterIP")
            if not ip:
                spec["clusterIP"] = old_ip if old_ip else self._next_ip(ips)
            elif ip != "None" and ip != old_ip:
                if ipaddress.ip_address(ip) not in self.network:
                    raise Invalid(
                        f"spec.clusterIP: {ip} is not in the service range {self.network}"
                    )
                if ip in ips:
                    raise Invalid(f"spec.clusterIP: provided IP {ip} is already allocated")
            if spec.get("clusterIP") and spec["clusterIP"] != "None":
                spec["clusterIPs"] = [spec["clusterIP"]]
            if spec.get("type") in ("NodePort", "LoadBalancer"):
                old_spec = (old or {}).get("spec") or {}
                old_ports = {
                    (p.get("port"), p.get("protocol")): p.get("nodePort")
                    for p in old_spec.get("ports") or []
                }
                # allocateLoadBalancerNodePorts: false keeps LoadBalancer
                # Services without node ports unless asked for (or kept).
                allocate = spec.get("type") == "NodePort" or spec.get(
                    "allocateLoadBalancerNodePorts", True
                )
                for i, port in enumerate(spec.get("ports") or []):
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
                self._health_check_port(spec, old_spec, node_ports)
            else:
                spec.pop("healthCheckNodePort", None)

    def _health_check_port(
        self, spec: dict[str, Any], old_spec: dict[str, Any], used: set[int]
    ) -> None:
        """A LoadBalancer Service with externalTrafficPolicy Local gets a
        healthCheckNodePort (kube-proxy answers there how many local
        endpoints the node has); others have none."""
        if not (
            spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"
        ):
            spec.pop("healthCheckNodePort", None)
            return
        wanted, previous = spec.get("healthCheckNodePort"), old_spec.get("healthCheckNodePort")
        if wanted is None:
            spec["healthCheckNodePort"] = previous or self._next_port(used)
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

    def _next_port(self, used: set[int]) -> int:
        for port in range(NODE_PORT_RANGE[0], NODE_PORT_RANGE[1] + 1):
            if port not in used:
                return port
        raise Forbidden("the node port range is full")


def default_admission(service_cidr: str = "10.43.0.0/16") -> dict[str, Admit]:
    """kind key -> admission hook: each built-in kind's definition's `admit`."""
    allocator = ServiceAllocator(service_cidr)
    hooks: dict[str, Admit] = {
        "Pod": admit_pod,
        "PriorityClass": admit_priorityclass,
        "Job": admit_job,
        "Secret": admit_secret,
        "Service": allocator.admit,
        **storage_admission.ADMISSION,
        **admission_volcano.ADMISSION,
    }
    for definition in kinds.builtin_definitions():
        if definition.admit is not None:
            hooks[definition.key] = definition.admit
    return hooks
