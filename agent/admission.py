"""Node admission: the kubelet's last check before it runs a pod bound to it.

A pod is rejected (phase Failed, with the kubelet's reason) when the node
cannot hold it whatever the scheduler thought, e.g. a pod bound by
`nodeName`: its cpu or memory requests do not fit the allocatable left by
the pods already admitted (`OutOfcpu`, `OutOfmemory`), the node already runs
its pod count (`OutOfpods`), it asks for a host port another admitted pod
holds (`NodePorts`), or it tolerates none of a NoExecute taint of the node
(`Taint`). Pure: the caller passes the node and the admitted pods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controlplane.api.quantity import parse_quantity
from controlplane.api.taints import tolerates
from machinery.podresources import pod_total


@dataclass(frozen=True)
class Rejection:
    reason: str
    message: str


def quantity(value: Any) -> float:
    """A quantity as a number (cpu in cores); 0 when it does not parse."""
    try:
        return float(parse_quantity(value))
    except (ValueError, TypeError):
        return 0.0


def _requests(container: Mapping[str, Any]) -> dict[str, float]:
    res = container.get("resources") or {}
    asked = {**(res.get("limits") or {}), **(res.get("requests") or {})}
    return {name: quantity(v) for name, v in asked.items()}


def pod_requests(pod: Mapping[str, Any]) -> dict[str, float]:
    """The pod's effective requests, as the kubelet's resource helper
    (machinery/podresources.py), cpu in cores. A container's request
    defaults to its limit (the API's defaulting)."""
    spec = pod.get("spec") or {}
    overhead = {name: quantity(v) for name, v in (spec.get("overhead") or {}).items()}
    return pod_total(spec, _requests, overhead)


def _host_ports(pod: Mapping[str, Any]) -> set[tuple[str, str, int]]:
    out = set()
    spec = pod.get("spec") or {}
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                ip = p.get("hostIP") or "0.0.0.0"
                out.add((p.get("protocol") or "TCP", ip, int(p["hostPort"])))
    return out


def _ports_clash(a: tuple[str, str, int], b: tuple[str, str, int]) -> bool:
    wild = ("0.0.0.0", "::", "")
    return a[0] == b[0] and a[2] == b[2] and (a[1] == b[1] or a[1] in wild or b[1] in wild)


def _fmt(name: str, v: float) -> str:
    """As the kubelet's InsufficientResourceError: cpu in millicores, the rest in units."""
    return str(round(v * 1000)) if name == "cpu" else str(int(v))


def admit(
    pod: Mapping[str, Any], node: Mapping[str, Any], admitted: Sequence[Mapping[str, Any]]
) -> Rejection | None:
    """None if `pod` may run beside the `admitted` (active) pods on `node`."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    if "pods" in allocatable and len(admitted) + 1 > quantity(allocatable["pods"]):
        return Rejection(
            "OutOfpods",
            f"Node didn't have enough resource: pods, requested: 1, used: {len(admitted)},"
            f" capacity: {allocatable['pods']}",
        )
    want = pod_requests(pod)
    for name in ("cpu", "memory", *sorted(k for k in want if k not in ("cpu", "memory"))):
        if want.get(name, 0.0) <= 0 or name not in allocatable:
            continue
        used = sum(pod_requests(p).get(name, 0.0) for p in admitted)
        capacity = quantity(allocatable[name])
        if used + want[name] > capacity:
            return Rejection(
                f"OutOf{name}",
                f"Node didn't have enough resource: {name}, requested: {_fmt(name, want[name])},"
                f" used: {_fmt(name, used)}, capacity: {_fmt(name, capacity)}",
            )
    mine = _host_ports(pod)
    if mine:
        taken = set().union(*(_host_ports(p) for p in admitted)) if admitted else set()
        for port in sorted(mine):
            if any(_ports_clash(port, other) for other in taken):
                return Rejection(
                    "NodePorts",
                    f"Node didn't have free ports for the requested pod ports ({port[0]} {port[2]})",
                )
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") != "NoExecute":
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            shown = f"{taint.get('key')}: {taint.get('value', '')}".rstrip(": ")
            return Rejection("Taint", f"Node had taint {{{shown}}}, that the pod didn't tolerate")
    return None
