"""Node (v1, cluster-scoped): a worker; the agent registers it with its status.

Validation: taints (a qualified key, an effect), podCIDR (set once: an
update may not change it), unschedulable a boolean. A create keeps the status it carries, and gets the not-ready
NoSchedule taint (Kubernetes' TaintNodesByCondition admission); nodeInfo has
every field. Columns: NAME STATUS ROLES
AGE VERSION; wide adds INTERNAL-IP EXTERNAL-IP OS-IMAGE KERNEL-VERSION
CONTAINER-RUNTIME, as kubectl prints them.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from controlplane.api.checks import Errors, each_object, enum, is_qualified_name, items, mapping
from controlplane.api.display import NONE, age, meta, name, spec, status
from controlplane.api.kinds.definition import AdmissionApi, KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, facts, merge
from controlplane.api.schema import CORE, declare

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    node_spec: Any = obj.get("spec")
    if not mapping(e, "spec", node_spec):
        return
    taints: Any = node_spec.get("taints")
    if items(e, "spec.taints", taints):
        for path, t in each_object(e, "spec.taints", taints, required=True):
            if not t.get("key") or not is_qualified_name(str(t.get("key"))):
                e.add(f"{path}.key", "required (a qualified name)")
            if t.get("effect") is None:
                e.add(f"{path}.effect", "required")
            enum(
                e,
                f"{path}.effect",
                t.get("effect"),
                ("NoSchedule", "PreferNoSchedule", "NoExecute"),
            )
    for field in ("podCIDR",):
        value: Any = node_spec.get(field)
        if value:
            try:
                ipaddress.ip_network(value, strict=False)
            except ValueError:
                e.add(f"spec.{field}", f"{value!r} is not a valid CIDR")
    if "unschedulable" in node_spec and not isinstance(node_spec["unschedulable"], bool):
        e.add("spec.unschedulable", "must be a boolean")
    old_cidrs = pod_cidrs((old or {}).get("spec"))
    if old_cidrs and pod_cidrs(node_spec) != old_cidrs:
        # Kubernetes' ValidateNodeUpdate: a node's pod subnet is set once
        # (by node IPAM); moving it under running pods would give two nodes
        # the same subnet and leave routes pointing at the wrong node.
        e.forbidden("spec.podCIDRs", 'node updates may not change podCIDR except from "" to valid')


def pod_cidrs(node_spec: Any) -> list[str]:
    """The node's pod CIDRs as Kubernetes reads a v1 Node: `podCIDRs`, or
    `podCIDR` alone when `podCIDRs` is empty."""
    if not isinstance(node_spec, dict):
        return []
    cidrs = node_spec.get("podCIDRs")
    if isinstance(cidrs, list) and cidrs:
        return [str(c) for c in cidrs]
    single = node_spec.get("podCIDR")
    return [str(single)] if single else []


NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}

# NodeSystemInfo's fields: Kubernetes writes every one (none is omitempty), and
# client models (the official Python client, lightkube) require them all.
NODE_INFO_FIELDS = (
    "machineID",
    "systemUUID",
    "bootID",
    "kernelVersion",
    "osImage",
    "containerRuntimeVersion",
    "kubeletVersion",
    "kubeProxyVersion",
    "operatingSystem",
    "architecture",
)


def defaults(obj: Object) -> None:
    """status.nodeInfo with every field, empty where the node says nothing,
    and daemonEndpoints' kubelet port, as a Kubernetes Node always has them."""
    node_status = obj.get("status")
    if not isinstance(node_status, dict):
        return
    info = node_status.setdefault("nodeInfo", {})
    if isinstance(info, dict):
        for field in NODE_INFO_FIELDS:
            info.setdefault(field, "")
    endpoints = node_status.setdefault("daemonEndpoints", {})
    if isinstance(endpoints, dict):
        kubelet = endpoints.setdefault("kubeletEndpoint", {})
        if isinstance(kubelet, dict):
            kubelet.setdefault("Port", 0)


def admit(api: AdmissionApi, info: KindInfo, obj: Object, old: Object | None) -> None:
    """TaintNodesByCondition's admission: a new Node carries the not-ready
    NoSchedule taint, so no pod is scheduled to it before it reports Ready
    (the node lifecycle controller removes the taint then)."""
    if old is not None:
        return
    node_spec = obj.setdefault("spec", {})
    if not isinstance(node_spec, dict):
        return
    taints = node_spec.get("taints")
    if not isinstance(taints, list):
        taints = node_spec["taints"] = []
    if not any(isinstance(t, dict) and t.get("key") == NOT_READY_TAINT["key"]
               and t.get("effect") == "NoSchedule" for t in taints):  # fmt: skip
        taints.append(dict(NOT_READY_TAINT))


def ready(node: Object) -> str:
    """Ready, NotReady or Unknown, from the Ready condition."""
    for c in status(node).get("conditions") or []:
        if c.get("type") == "Ready":
            return {"True": "Ready", "False": "NotReady"}.get(str(c.get("status")), "Unknown")
    return "Unknown"


def roles(node: Object) -> str:
    """The ROLES column: node-role.kubernetes.io/<role> labels (and kubernetes.io/role)."""
    found = []
    for key, value in (meta(node).get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/"):
            found.append(key.split("/", 1)[1])
        elif key == "kubernetes.io/role":
            found.append(str(value))
    return ",".join(sorted(r for r in found if r)) or NONE


def row(obj: Object, now: float, wide: bool) -> list[str]:
    state = ready(obj)
    if spec(obj).get("unschedulable"):
        state += ",SchedulingDisabled"
    info = status(obj).get("nodeInfo") or {}
    cells = [name(obj), state, roles(obj), age(obj, now), str(info.get("kubeletVersion") or "")]
    if wide:
        addrs = status(obj).get("addresses") or []

        def addr(kind: str) -> str:
            return next((str(a.get("address")) for a in addrs if a.get("type") == kind), NONE)

        cells += [
            addr("InternalIP"),
            addr("ExternalIP"),
            str(info.get("osImage") or "<unknown>"),
            str(info.get("kernelVersion") or "<unknown>"),
            str(info.get("containerRuntimeVersion") or "<unknown>"),
        ]
    return cells


DEFINITION = KindDef(
    KindInfo("Node", "v1", short_names=("no",), namespaced=False),
    types={
        **declare(
            CORE,
            """
            Node [v1 Node]: Node is a worker node.
                spec    NodeSpec
                status  object
            NodeSpec: NodeSpec describes the attributes that a node is created with.
                podCIDR        string    The pod IP range assigned to the node.
                podCIDRs       []string  The pod IP ranges assigned to the node.
                providerID     string    ID of the node assigned by the cloud provider.
                unschedulable  boolean   Whether new pods may be scheduled on the node.
                taints         []object  The node's taints.
                configSource   object    Deprecated.
                externalID     string    Deprecated.
            """,
        ),
    },
    validate=validate,
    defaults=defaults,
    admit=admit,
    keeps_status_on_create=True,
    printer=Printer(
        columns(
            ("NAME", "STATUS", "ROLES", "AGE", "VERSION"),
            ("INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"),
        ),
        row,
    ),
    patch_meta=facts(
        status={**CONDITIONS, "addresses": merge("type")}, extra={"spec.podCIDRs": merge()}
    ),
)
