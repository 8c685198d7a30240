"""The built-in ingress controller's control-plane half (the agents run HAProxy).

- At start it makes the IngressClass `skiff` (controller
  `skiff.io/ingress-controller`, annotated the default class) when missing,
  so an Ingress without a class is ours; `skiff controlplane --disable
  ingress` runs none of this, and the agents then serve nothing.
- Per Ingress of our class (controlplane/client/ingressclasses.py: a
  class-less one too while ours is the default class):
  `status.loadBalancer.ingress` lists the nodes whose agent serves it
  (Ready, annotated `ingress.skiff.io/ports` by the agent once its HAProxy
  answers; an agent starts HAProxy for the first Ingress, so the status
  follows within a sync), ExternalIP over InternalIP as ServiceLB picks,
  with the ports when they are not 80 and 443.
- A backend Service (or its port) or a TLS Secret that does not exist gets
  a Warning event on the Ingress (`ServiceNotFound`, `SecretNotFound`) each
  time the set of such problems changes; the edge answers 503 for the former
  and serves the default certificate for the latter.

Ingresses of other classes (ingress-nginx's `nginx`, ...) are left alone.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from controlplane.client import errors, ingressclasses
from controlplane.client.interface import Object
from controlplane.controllers import podutil
from controlplane.controllers.base import Controller, ControllerContext

CONTROLLER = "skiff.io/ingress-controller"
CLASS_NAME = "skiff"
PORTS_ANNOTATION = "ingress.skiff.io/ports"
DEFAULT_ANNOTATION = ingressclasses.DEFAULT_CLASS_ANNOTATION


def default_ingress_class() -> Object:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": {
            "name": CLASS_NAME,
            "annotations": {DEFAULT_ANNOTATION: "true"},
            "labels": {"app.kubernetes.io/managed-by": "skiff"},
        },
        "spec": {"controller": CONTROLLER},
    }


def _ports(value: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in value.split(","):
        name, _, number = part.partition("=")
        if number.isdigit():
            out[name.strip()] = int(number)
    return out


def serving_addresses(nodes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """status.loadBalancer.ingress for the nodes that serve (see the docstring)."""
    external: dict[str, dict[str, int]] = {}
    internal: dict[str, dict[str, int]] = {}
    for node in nodes:
        annotations = podutil.meta(node).get("annotations") or {}
        conds = podutil.status(node).get("conditions") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)
        ports = _ports(str(annotations.get(PORTS_ANNOTATION) or ""))
        if not ready or not ports:
            continue
        for addr in podutil.status(node).get("addresses") or []:
            if addr.get("type") == "ExternalIP":
                external[str(addr["address"])] = ports
            elif addr.get("type") == "InternalIP":
                internal[str(addr["address"])] = ports
    chosen = external or internal
    out: list[dict[str, Any]] = []
    for ip in sorted(chosen):
        entry: dict[str, Any] = {"ip": ip}
        ports = chosen[ip]
        if (ports.get("http"), ports.get("https")) != (80, 443):
            entry["ports"] = [{"port": p, "protocol": "TCP"} for p in sorted(ports.values())]
        out.append(entry)
    return out


def _backends(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    if spec.get("defaultBackend"):
        yield spec["defaultBackend"]
    for rule in spec.get("rules") or []:
        for p in (rule.get("http") or {}).get("paths") or []:
            if isinstance(p, Mapping) and p.get("backend"):
                yield p["backend"]


class IngressStatusController(Controller):
    name = "ingress"
    default_workers = 2

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.ingresses = self.watch_primary("Ingress")
        self.classes = self.watch("IngressClass")
        self.nodes = self.watch("Node")
        self.services = self.watch("Service")
        every = lambda *_: self._all()  # noqa: E731
        self.nodes.add_event_handler(on_add=every, on_update=self._node_updated, on_delete=every)
        self.classes.add_event_handler(on_add=every, on_update=every, on_delete=every)
        self.services.add_event_handler(on_add=every, on_delete=every)
        self._problems: dict[str, list[tuple[str, str]]] = {}
        try:
            self.client.create("IngressClass", default_ingress_class())
        except errors.AlreadyExists:
            pass

    def _all(self) -> None:
        for ing in self.ingresses.store.list():
            self.enqueue(ing)

    def _node_updated(self, old: Object, new: Object) -> None:
        def facts(n: Object) -> tuple[Any, ...]:
            ann = podutil.meta(n).get("annotations") or {}
            conds = podutil.status(n).get("conditions") or []
            ready = [c.get("status") for c in conds if c.get("type") == "Ready"]
            return (ann.get(PORTS_ANNOTATION), ready, podutil.status(n).get("addresses"))

        if facts(old) != facts(new):
            self._all()

    def _ours(self, ing: Mapping[str, Any]) -> bool:
        return bool(ingressclasses.served_by(CONTROLLER, [ing], self.classes.store.list()))

    def _check(self, ing: Mapping[str, Any]) -> list[tuple[str, str]]:
        ns = podutil.namespace_of(ing)
        spec = podutil.spec(ing)
        found: list[tuple[str, str]] = []
        for backend in _backends(spec):
            ref = backend.get("service") or {}
            name = str(ref.get("name") or "")
            if not name:
                continue
            svc = self.services.store.get(name, ns)
            port = ref.get("port") or {}
            if svc is None:
                found.append(
                    (
                        "ServiceNotFound",
                        f'service "{ns}/{name}" does not exist; its paths answer 503',
                    )
                )
                continue
            ports = podutil.spec(svc).get("ports") or []
            if not any(
                (port.get("number") is not None and p.get("port") == port.get("number"))
                or (port.get("name") and p.get("name") == port.get("name"))
                for p in ports
            ):
                want = port.get("number") or port.get("name")
                found.append(
                    (
                        "ServiceNotFound",
                        f'service "{ns}/{name}" has no port {want}; its paths answer 503',
                    )
                )
        for tls in spec.get("tls") or []:
            secret = str((tls or {}).get("secretName") or "")
            if not secret:
                continue
            try:
                self.client.get("Secret", secret, ns)
            except errors.NotFound:
                found.append(
                    (
                        "SecretNotFound",
                        f'secret "{ns}/{secret}" does not exist; using the default certificate',
                    )
                )
        return sorted(set(found))

    def sync(self, key: str) -> float | None:
        ing = self.ingresses.store.get_by_key(key)
        if ing is None or podutil.is_deleting(ing):
            self._problems.pop(key, None)
            return None
        if not self._ours(ing):
            return None
        found = self._check(ing)
        if found != self._problems.get(key, []):
            for reason, message in found:
                self.recorder.event(ing, "Warning", reason, message)
            self._problems[key] = found
        status = copy.deepcopy(dict(podutil.status(ing)))
        addresses = serving_addresses(self.nodes.store.list())
        status["loadBalancer"] = {"ingress": addresses} if addresses else {}
        self.write_status("Ingress", ing, status)
        return None


def init(ctx: ControllerContext) -> Controller:
    return IngressStatusController(ctx)
