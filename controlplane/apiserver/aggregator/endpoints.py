"""An APIService's Service -> the URLs of its endpoints, or why there are none.

As kube-aggregator's service resolver: the Service is read, the port the
APIService names (`spec.service.port`, 443 by default) is found among the
Service's ports, and the Endpoints of the Service give the addresses with
that port's target (by port name). The API server dials them directly,
so aggregation works on a control-plane host that runs no agent and no
proxy. An ExternalName Service is dialed at its external name. The
failures carry kube-aggregator's reasons and messages for the Available
condition. Pure: `read(kind, namespace, name)` does the reading.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Object = dict[str, Any]
Read = Callable[[str, str, str], Object | None]  # (kind, namespace, name) -> object or None


@dataclass(frozen=True)
class Unresolved(Exception):
    reason: str  # ServiceNotFound, ServiceAccessError, MissingEndpoints
    message: str


def _host(ip: str) -> str:
    return f"[{ip}]" if ":" in ip else ip


def resolve(read: Read, namespace: str, name: str, port: int) -> list[str]:
    """`https://host:port` of every ready endpoint of the Service; raises
    Unresolved with the Available condition's reason and message."""
    service = read("Service", namespace, name)
    if service is None:
        raise Unresolved("ServiceNotFound", f'service/{name} in "{namespace}" is not present')
    spec = service.get("spec") or {}
    ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
    found = next((p for p in ports if p.get("port") == port), None)
    if spec.get("type") == "ExternalName":
        return [f"https://{spec.get('externalName', '')}:{port}"]
    if found is None:
        raise Unresolved(
            "ServiceAccessError", f'service/{name} in "{namespace}" is not listening on port {port}'
        )
    endpoints = read("Endpoints", namespace, name)
    if endpoints is None:
        raise Unresolved(
            "MissingEndpoints", f'cannot find endpoints for service/{name} in "{namespace}"'
        )
    port_name = str(found.get("name") or "")
    target = found.get("targetPort", port)
    urls: list[str] = []
    for subset in endpoints.get("subsets") or []:
        if not isinstance(subset, dict):
            continue
        numbers = [
            p.get("port") for p in subset.get("ports") or []
            if isinstance(p, dict) and str(p.get("name") or "") == port_name
        ]  # fmt: skip
        if not numbers and not port_name and isinstance(target, int):
            numbers = [target]
        for number in numbers[:1]:
            for address in subset.get("addresses") or []:
                ip = str((address or {}).get("ip") or "")
                if ip:
                    urls.append(f"https://{_host(ip)}:{number}")
    if not urls:
        raise Unresolved(
            "MissingEndpoints",
            f'endpoints for service/{name} in "{namespace}" have no addresses with port name '
            f'"{port_name}"',
        )
    return urls
