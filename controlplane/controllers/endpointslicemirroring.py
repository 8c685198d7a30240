"""The EndpointSlice mirroring controller: custom Endpoints as EndpointSlices.

For an Endpoints object whose Service exists and has no selector (the
user, not the endpoint controller, writes its addresses), as Kubernetes'
endpointslicemirroring controller: each subset's `addresses` become
endpoints with `ready: true` and its `notReadyAddresses` with
`ready: false` (targetRef, nodeName and hostname kept), grouped by the
subset's ports and by IP family; addresses no EndpointSlice may hold
(loopback, link-local, unspecified) are left out, and at most
`MAX_ENDPOINTS_PER_SUBSET` (1000) of each subset are mirrored. Slices are
named `<endpoints>-<random>`, labelled with the Endpoints' labels,
kubernetes.io/service-name and
endpointslice.kubernetes.io/managed-by=endpointslicemirroring-controller.k8s.io,
carry its annotations and are owned by the Endpoints. An Endpoints labelled
endpointslice.kubernetes.io/skip-mirror=true, a Service with a selector or
no Service at all: its mirrored slices go.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from controlplane.api.kinds.discovery.endpointslice import endpoint_ip_problem
from controlplane.client.interface import Object
from controlplane.controllers import podutil
from controlplane.controllers.base import Controller, ControllerContext
from controlplane.controllers.endpointslice import SliceWriter, service_of_slice
from controlplane.controllers.slicesync import (
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
    GroupKey,
    Owner,
    Plan,
    plan,
    ports_key,
)

CONTROLLER_NAME = "endpointslicemirroring-controller.k8s.io"
SKIP_MIRROR_LABEL = "endpointslice.kubernetes.io/skip-mirror"
MAX_ENDPOINTS_PER_SUBSET = 1000
BY_ENDPOINTS = "mirrored-endpointslices-by-service"
# Annotations Kubernetes does not copy onto mirrored slices.
NOT_COPIED = ("endpoints.kubernetes.io/last-change-trigger-time",
              "kubectl.kubernetes.io/last-applied-configuration")  # fmt: skip


def _address_type(ip: str) -> str | None:
    try:
        parsed = ipaddress.ip_address(ip)
    except ValueError:
        return None
    if str(parsed) != ip or endpoint_ip_problem(ip):
        return None
    return "IPv6" if parsed.version == 6 else "IPv4"


def _endpoint(address: Mapping[str, Any], ready: bool) -> Object:
    """Kubernetes' addressToEndpoint."""
    endpoint: Object = {"addresses": [str(address.get("ip"))], "conditions": {"ready": ready}}
    if address.get("targetRef"):
        endpoint["targetRef"] = dict(address["targetRef"])
    if address.get("nodeName"):
        endpoint["nodeName"] = address["nodeName"]
    if address.get("hostname"):
        endpoint["hostname"] = address["hostname"]
    return endpoint


def mirrored_endpoints(endpoints: Mapping[str, Any]) -> dict[GroupKey, list[Object]]:
    """The slices' endpoints of a custom Endpoints object, per address type and port set."""
    groups: dict[GroupKey, list[Object]] = {}
    for subset in endpoints.get("subsets") or []:
        if not isinstance(subset, Mapping):
            continue
        ports = ports_key(
            {"name": str(p.get("name") or ""), "port": p.get("port"),
             "protocol": str(p.get("protocol") or "TCP"),
             **({"appProtocol": p["appProtocol"]} if p.get("appProtocol") else {})}
            for p in subset.get("ports") or [] if isinstance(p, Mapping)
        )  # fmt: skip
        count = 0
        for field, ready in (("addresses", True), ("notReadyAddresses", False)):
            for address in subset.get(field) or []:
                if not isinstance(address, Mapping) or count >= MAX_ENDPOINTS_PER_SUBSET:
                    continue
                address_type = _address_type(str(address.get("ip")))
                if address_type is None:
                    continue
                count += 1
                groups.setdefault((address_type, ports), []).append(_endpoint(address, ready))
    return groups


class EndpointSliceMirroringController(Controller):
    name = "endpointslicemirroring"
    default_workers = 5

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.endpoints = self.watch_primary("Endpoints")
        self.services = self.watch("Service")
        self.follow(self.services, self.enqueue, self.enqueue)  # same key as its Endpoints
        self.slices = self.watch("EndpointSlice", {BY_ENDPOINTS: service_of_slice(CONTROLLER_NAME)})
        self.follow(self.slices, self._slice, self._slice)
        self.writer = SliceWriter(self, self.slices, BY_ENDPOINTS)

    def _slice(self, obj: Object) -> None:
        for key in service_of_slice(CONTROLLER_NAME)(obj):
            self.enqueue_key(key)

    def sync(self, key: str) -> float | None:
        ns, _, name = key.partition("/")
        existing = self.writer.existing(key)
        if existing is None:
            return 0.2
        endpoints = self.endpoints.store.get_by_key(key)
        svc = self.services.store.get_by_key(key)
        if (
            endpoints is None
            or podutil.is_deleting(endpoints)
            or svc is None
            or podutil.spec(svc).get("selector")
            or podutil.labels_of(endpoints).get(SKIP_MIRROR_LABEL) == "true"
        ):
            if existing:
                self.writer.apply(key, ns, Plan(delete=list(existing)))
            return None
        labels = {k: v for k, v in podutil.labels_of(endpoints).items()
                  if k not in (SERVICE_NAME_LABEL, MANAGED_BY_LABEL)}  # fmt: skip
        labels[SERVICE_NAME_LABEL] = name
        labels[MANAGED_BY_LABEL] = CONTROLLER_NAME
        annotations = {k: v for k, v in podutil.annotations_of(endpoints).items()
                       if k not in NOT_COPIED}  # fmt: skip
        owner = Owner(ns, f"{name}-", labels,
                      podutil.owner_ref({"apiVersion": "v1", "kind": "Endpoints", **endpoints}),
                      annotations)  # fmt: skip
        todo = plan(owner, existing, mirrored_endpoints(endpoints), MAX_ENDPOINTS_PER_SUBSET,
                    placeholder="")  # fmt: skip
        self.writer.apply(key, ns, todo)
        return None


def init(ctx: ControllerContext) -> Controller:
    return EndpointSliceMirroringController(ctx)
