"""Reading a Service's endpoints from its EndpointSlices, as kube-proxy does.

The consumers of endpoints (the agent's service proxy and DNS, ServiceLB, the
ingress controller) read `discovery.k8s.io/v1` EndpointSlices, not Endpoints:
the slices of one Service are those labelled `kubernetes.io/service-name`
with its name in its namespace, merged; an endpoint's conditions follow
kube-proxy's endpointslicecache (`ready` unset counts as ready, `serving`
unset as serving, `terminating` unset as not terminating); ports match a
Service port by name and protocol. Only `addressType: IPv4` slices are read
(skiff's cluster network is IPv4), and slices being deleted are skipped.

`service_index` files a slice under `ns/<service>` for an informer
(`SharedInformer.add_indexers({SERVICE_INDEX: service_index})`), so a
consumer finds one Service's slices without scanning all of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
SERVICE_INDEX = "service"


@dataclass(frozen=True, order=True)
class SliceEndpoint:
    """One address of a slice, for one port (port 0 when ports were not asked for)."""

    ip: str
    port: int
    node_name: str
    ready: bool
    serving: bool
    terminating: bool
    hostname: str = ""
    zone: str = ""
    target_kind: str = ""
    target_name: str = ""


def service_of(slice_: Mapping[str, Any]) -> str:
    """`ns/<service>` the slice belongs to, or "" when it has no service-name label."""
    meta = slice_.get("metadata")
    if not isinstance(meta, Mapping):
        return ""
    labels = meta.get("labels")
    name = labels.get(SERVICE_NAME_LABEL) if isinstance(labels, Mapping) else None
    if not isinstance(name, str) or not name:
        return ""
    return f"{meta.get('namespace') or 'default'}/{name}"


def service_index(slice_: Mapping[str, Any]) -> list[str]:
    key = service_of(slice_)
    return [key] if key else []


def usable(slice_: Mapping[str, Any]) -> bool:
    meta = slice_.get("metadata")
    if isinstance(meta, Mapping) and meta.get("deletionTimestamp"):
        return False
    return bool(slice_.get("addressType", "IPv4") == "IPv4")


def group_by_service(slices: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """`ns/<service>` -> that Service's usable slices."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    for s in slices:
        key = service_of(s)
        if key and usable(s):
            out.setdefault(key, []).append(s)
    return out


def flag(conditions: Mapping[str, Any], name: str, unset: bool) -> bool:
    """A condition of an endpoint, `unset` when the slice leaves it out."""
    value = conditions.get(name)
    return unset if value is None else value is True


def port_numbers(slice_: Mapping[str, Any], port_name: str | None, protocol: str) -> list[int]:
    """The slice's port numbers named `port_name` with `protocol` ([0] for None)."""
    if port_name is None:
        return [0]
    out: list[int] = []
    for p in slice_.get("ports") or []:
        if not isinstance(p, Mapping):
            continue
        number = p.get("port")
        if not isinstance(number, int) or isinstance(number, bool) or number <= 0:
            continue
        if str(p.get("name") or "") == port_name and str(p.get("protocol") or "TCP") == protocol:
            out.append(number)
    return out


def endpoints(
    slices: Iterable[Mapping[str, Any]],
    port_name: str | None = None,
    protocol: str = "TCP",
) -> Iterator[SliceEndpoint]:
    """Every address of the usable `slices` for the port named `port_name`
    (with `protocol`), or once per address with port 0 when `port_name` is
    None. Addresses may repeat across slices: callers dedupe as they need."""
    for s in slices:
        if not usable(s):
            continue
        numbers = port_numbers(s, port_name, protocol)
        if not numbers:
            continue
        for ep in s.get("endpoints") or []:
            if not isinstance(ep, Mapping):
                continue
            addresses = ep.get("addresses")
            if not isinstance(addresses, list) or not addresses:
                continue
            ip = str(addresses[0])  # kube-proxy uses the first address
            cond = ep.get("conditions")
            cond = cond if isinstance(cond, Mapping) else {}
            ready = flag(cond, "ready", True)
            target = ep.get("targetRef")
            target = target if isinstance(target, Mapping) else {}
            for number in numbers:
                yield SliceEndpoint(
                    ip=ip,
                    port=number,
                    node_name=str(ep.get("nodeName") or ""),
                    ready=ready,
                    serving=flag(cond, "serving", True),
                    terminating=flag(cond, "terminating", False),
                    hostname=str(ep.get("hostname") or ""),
                    zone=str(ep.get("zone") or ""),
                    target_kind=str(target.get("kind") or ""),
                    target_name=str(target.get("name") or ""),
                )
