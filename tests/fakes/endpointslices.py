"""EndpointSlice objects for tests of their consumers (proxy, DNS, ServiceLB, ingress)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from controlplane.client.endpointslices import SERVICE_NAME_LABEL


def address(
    ip: str,
    node: str = "",
    ready: bool = True,
    serving: bool | None = None,
    terminating: bool = False,
    hostname: str = "",
    pod: str = "",
) -> dict[str, Any]:
    """One endpoint; `serving` defaults to `ready`, as the controller writes it
    for a pod that is not terminating."""
    ep: dict[str, Any] = {
        "addresses": [ip],
        "conditions": {
            "ready": ready,
            "serving": ready if serving is None else serving,
            "terminating": terminating,
        },
    }
    if node:
        ep["nodeName"] = node
    if hostname:
        ep["hostname"] = hostname
    if pod:
        ep["targetRef"] = {"kind": "Pod", "name": pod, "namespace": "default"}
    return ep


def endpoint_slice(
    service: str,
    endpoints: Sequence[dict[str, Any] | str],
    ports: Sequence[dict[str, Any]] = ({"port": 8080, "protocol": "TCP"},),
    name: str = "",
    namespace: str = "default",
    address_type: str = "IPv4",
) -> dict[str, Any]:
    """A slice of `service`; plain strings in `endpoints` are ready addresses."""
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name or f"{service}-abcde",
            "namespace": namespace,
            "labels": {SERVICE_NAME_LABEL: service},
        },
        "addressType": address_type,
        "endpoints": [address(e) if isinstance(e, str) else e for e in endpoints],
        "ports": [dict(p) for p in ports],
    }
