"""A Service reference resolved to one ready endpoint, by the API server
itself (as kube-apiserver's endpoint service resolver does with
--enable-aggregator-routing): webhooks then work where no agent runs and
no proxy rules exist.

The Service's port whose `port` is the one asked for gives its name; the
Service's EndpointSlices (label kubernetes.io/service-name) give the ready
endpoints and that port's number on them (the Endpoints object when no
slice has any). An ExternalName Service resolves to its external name. One
ready endpoint is picked at random per call, spreading calls over replicas.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from controlplane.apiserver.webhooks.client import CallError

Object = dict[str, Any]
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
# (kind, namespace, name) -> the object or None
Lookup = Callable[[str, str, str], Object | None]
# (kind, namespace) -> every object of the kind there
Objects = Callable[[str, str], list[Object]]


class ServiceResolver:
    def __init__(self, lookup: Lookup, objects: Objects) -> None:
        self.lookup = lookup
        self.objects = objects

    def __call__(self, namespace: str, name: str, port: int) -> tuple[str, int]:
        svc = self.lookup("Service", namespace, name)
        if svc is None:
            raise CallError(f'service "{name}" not found')
        spec = svc.get("spec") or {}
        if spec.get("type") == "ExternalName":
            return str(spec.get("externalName") or ""), port
        port_name = None
        for sp in spec.get("ports") or []:
            if isinstance(sp, dict) and sp.get("port") == port:
                port_name = str(sp.get("name") or "")
                break
        if port_name is None:
            raise CallError(f'service "{name}" has no port {port}')
        found = self._from_slices(namespace, name, port_name) or self._from_endpoints(
            namespace, name, port_name
        )
        if not found:
            raise CallError(f'no endpoints available for service "{name}"')
        return random.choice(found)

    def _from_slices(self, namespace: str, name: str, port_name: str) -> list[tuple[str, int]]:
        found: list[tuple[str, int]] = []
        for es in self.objects("EndpointSlice", namespace):
            labels = (es.get("metadata") or {}).get("labels") or {}
            if labels.get(SERVICE_NAME_LABEL) != name:
                continue
            numbers = [p.get("port") for p in es.get("ports") or []
                       if isinstance(p, dict) and str(p.get("name") or "") == port_name]  # fmt: skip
            if not numbers or not isinstance(numbers[0], int):
                continue
            for ep in es.get("endpoints") or []:
                ready = ((ep or {}).get("conditions") or {}).get("ready")
                addresses = (ep or {}).get("addresses") or []
                if ready is not False and addresses:
                    found.append((str(addresses[0]), numbers[0]))
        return found

    def _from_endpoints(self, namespace: str, name: str, port_name: str) -> list[tuple[str, int]]:
        eps = self.lookup("Endpoints", namespace, name)
        found: list[tuple[str, int]] = []
        for subset in (eps or {}).get("subsets") or []:
            numbers = [p.get("port") for p in subset.get("ports") or []
                       if isinstance(p, dict) and str(p.get("name") or "") == port_name]  # fmt: skip
            if not numbers or not isinstance(numbers[0], int):
                continue
            for address in subset.get("addresses") or []:
                if isinstance(address, dict) and address.get("ip"):
                    found.append((str(address["ip"]), numbers[0]))
        return found
