"""The Endpoints controller: for each Service with a selector, its pods' addresses.

Per Service (key = the Service's key): the pods in its namespace that match
its selector and have an IP, split into ready `addresses` and
`notReadyAddresses` (pods being deleted count as not ready, or are left out
unless publishNotReadyAddresses), with the Service's ports resolved against
each pod (a named targetPort looks up the container port of that name).
Pods with the same resolved ports share a subset. Writes the Endpoints
object of the same name only when it differs; deletes it with the Service.
Services without a selector are left alone (their Endpoints are the
user's).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.client.selectors import Selector, from_label_selector
from controlplane.client.store import object_key
from controlplane.controllers import podutil
from controlplane.controllers.base import Controller, ControllerContext


def _selector(svc: Mapping[str, Any]) -> Selector | None:
    sel = podutil.spec(svc).get("selector")
    if not sel:
        return None
    return from_label_selector({"matchLabels": dict(sel)})


def _resolve_port(pod: Mapping[str, Any], target: Any) -> int | None:
    if isinstance(target, int):
        return target
    text = str(target)
    if text.isdigit():
        return int(text)
    for c in podutil.spec(pod).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("name") == text:
                return int(p.get("containerPort", 0))
    return None


def endpoints_subsets(svc: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> list[Object]:
    """The Endpoints subsets for a Service over candidate pods (pure)."""
    spec = podutil.spec(svc)
    publish = bool(spec.get("publishNotReadyAddresses"))
    groups: dict[tuple[tuple[str, int, str], ...], dict[str, list[Object]]] = {}
    for pod in sorted(pods, key=lambda p: podutil.name_of(p)):
        ip = podutil.status(pod).get("podIP")
        if not ip or podutil.is_terminated(pod):
            continue
        if podutil.is_deleting(pod) and not publish:
            continue
        ports: list[tuple[str, int, str]] = []
        for sp in spec.get("ports") or []:
            target = sp.get("targetPort", sp.get("port"))
            number = _resolve_port(pod, target)
            if number is None:
                continue
            ports.append((str(sp.get("name", "")), number, str(sp.get("protocol", "TCP"))))
        address: Object = {
            "ip": ip,
            "targetRef": {
                "kind": "Pod",
                "name": podutil.name_of(pod),
                "namespace": podutil.namespace_of(pod),
                "uid": podutil.uid_of(pod),
            },
        }
        pspec = podutil.spec(pod)
        # A pod naming this Service as its subdomain is found by its hostname
        # (`<hostname>.<svc>.<ns>.svc`): StatefulSet pods, Volcano svc-plugin pods.
        if (
            pspec.get("hostname")
            and pspec.get("subdomain") == podutil.name_of(svc)
            and podutil.namespace_of(pod) == podutil.namespace_of(svc)
        ):
            address["hostname"] = pspec["hostname"]
        node = pspec.get("nodeName")
        if node:
            address["nodeName"] = node
        bucket = groups.setdefault(tuple(ports), {"addresses": [], "notReadyAddresses": []})
        ready = podutil.is_ready(pod) and not podutil.is_deleting(pod)
        bucket["addresses" if ready or publish else "notReadyAddresses"].append(address)
    subsets: list[Object] = []
    for ports_key, bucket in sorted(groups.items()):
        subset: Object = {}
        if bucket["addresses"]:
            subset["addresses"] = bucket["addresses"]
        if bucket["notReadyAddresses"]:
            subset["notReadyAddresses"] = bucket["notReadyAddresses"]
        port_list = []
        for name, number, proto in ports_key:
            entry: Object = {"port": number, "protocol": proto}
            if name:
                entry["name"] = name
            port_list.append(entry)
        if port_list:
            subset["ports"] = port_list
        subsets.append(subset)
    return subsets


class EndpointsController(Controller):
    name = "endpoint"
    default_workers = 5

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.services = self.watch_primary("Service")
        self.pods = self.watch("Pod")
        self.endpoints = self.watch("Endpoints")
        self.pods.add_event_handler(
            on_add=self._pod,
            on_update=self._pod_updated,
            on_delete=self._pod,
        )
        self.endpoints.add_event_handler(on_delete=self.enqueue)

    def _pod_updated(self, old: Object, new: Object) -> None:
        self._pod(old)
        if podutil.labels_of(old) != podutil.labels_of(new):
            self._pod(new)

    def _pod(self, pod: Object) -> None:
        labels = podutil.labels_of(pod)
        for svc in self.services.store.list(podutil.namespace_of(pod)):
            sel = _selector(svc)
            if sel is not None and sel.matches(labels):
                self.enqueue(svc)

    def sync(self, key: str) -> float | None:
        svc = self.services.store.get_by_key(key)
        ns, _, name = key.partition("/")
        if svc is None or podutil.is_deleting(svc):
            if self.endpoints.store.get_by_key(key) is not None:
                try:
                    self.client.delete("Endpoints", name, ns)
                except errors.NotFound:
                    pass
            return None
        sel = _selector(svc)
        if sel is None:
            return None
        subsets = endpoints_subsets(svc, self.pods.store.list(ns, sel))
        labels = dict(podutil.labels_of(svc))
        current = self.endpoints.store.get_by_key(object_key(svc))
        if current is None:
            body: Object = {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": name, "namespace": ns, "labels": labels},
                "subsets": subsets,
            }
            try:
                self.client.create("Endpoints", body, ns)
            except errors.AlreadyExists:
                current = self.client.get("Endpoints", name, ns)
            else:
                return None
        if (current.get("subsets") or []) == subsets and dict(podutil.labels_of(current)) == labels:
            return None
        body = copy.deepcopy(current)
        body["subsets"] = subsets
        body["metadata"]["labels"] = labels
        body["metadata"].pop("resourceVersion", None)
        self.client.update("Endpoints", body)
        return None


def init(ctx: ControllerContext) -> Controller:
    return EndpointsController(ctx)
