"""The namespace controller: empty a terminating namespace, then release it.

When a Namespace has a deletionTimestamp: mark it `Terminating`, delete
every object of every namespaced kind in it (default options, so bound pods
still stop gracefully), and re-check until nothing is left; then drop the
`kubernetes` finalizer from spec.finalizers so the API server removes the
namespace. It never touches another namespace.

Disabled by default in the manager: skiff's API server already does this
inside its process (controlplane/apiserver/namespaces.py). This controller
does the same job through the client, for a manager pointed at an API
server that does not.
"""

from __future__ import annotations

import copy

from controlplane.api import kinds
from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.controllers import podutil
from controlplane.controllers.base import Controller, ControllerContext


class NamespaceController(Controller):
    name = "namespace"
    default_workers = 10

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.namespaces = self.watch("Namespace")
        self.follow(self.namespaces, self._changed)

    def _changed(self, ns: Object) -> None:
        if podutil.is_deleting(ns):
            self.enqueue(ns)

    def sync(self, key: str) -> float | None:
        ns = self.namespaces.store.get_by_key(key)
        if ns is None or not podutil.is_deleting(ns):
            return None
        name = podutil.name_of(ns)
        if not self.write_status("Namespace", ns, {**podutil.status(ns), "phase": "Terminating"}):
            return None
        remaining = 0
        for info in kinds.all_kinds():
            # Create-only and read-only kinds are never stored: nothing to delete
            # (and a read-only group such as metrics.k8s.io may not be served:
            # `--disable metrics-server`, seen by the API server's process only).
            if not info.namespaced or info.create_only or info.read_only:
                continue
            try:
                items = self.client.list(info.key, name).items
            except errors.NotFound:
                continue
            for obj in items:
                remaining += 1
                if podutil.is_deleting(obj):
                    continue
                try:
                    self.client.delete(info.key, podutil.name_of(obj), name)
                except errors.NotFound:
                    remaining -= 1
        if remaining:
            return 2.0
        try:
            fresh = self.client.get("Namespace", name)
        except errors.NotFound:
            return None
        spec_finalizers = [
            f for f in podutil.spec(fresh).get("finalizers") or [] if f != "kubernetes"
        ]
        if spec_finalizers != list(podutil.spec(fresh).get("finalizers") or []):
            body = copy.deepcopy(fresh)
            body["spec"]["finalizers"] = spec_finalizers
            try:
                self.client.update("Namespace", body)
            except errors.NotFound:
                pass
        return None


def init(ctx: ControllerContext) -> Controller:
    return NamespaceController(ctx)
