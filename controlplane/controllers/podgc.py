"""Pod garbage collection: remove pods nobody will ever clean up.

Every `pod_gc_period` seconds (injected clock), one pass: delete terminated
pods (Succeeded/Failed) above `terminated_pod_gc_threshold`, oldest first;
force-delete pods bound to a Node that no longer exists (checked live
before acting); force-delete pods marked for deletion that were never
scheduled (no agent will confirm them). It never touches a running pod on
a live node.
"""

from __future__ import annotations

from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.controllers import podutil
from controlplane.controllers.base import Controller, ControllerContext

KEY = "podgc"


class PodGCController(Controller):
    name = "podgc"
    default_workers = 1

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.pods = self.watch("Pod")
        self.nodes = self.watch("Node")
        self.enqueue_key(KEY)
        self.deleted: list[str] = []

    def _force(self, pod: Object, reason: str) -> None:
        try:
            self.delete_pod(pod, grace_period_seconds=0)
            self.deleted.append(f"{podutil.namespace_of(pod)}/{podutil.name_of(pod)}:{reason}")
        except (errors.NotFound, errors.Conflict):
            pass

    def sync(self, key: str) -> float | None:
        pods = self.pods.store.list()
        terminated = [p for p in pods if podutil.is_terminated(p) and not podutil.is_deleting(p)]
        excess = len(terminated) - self.config.terminated_pod_gc_threshold
        if excess > 0:
            terminated.sort(key=lambda p: (podutil.created_at(p), podutil.name_of(p)))
            for pod in terminated[:excess]:
                self._force(pod, "terminated")
        for pod in pods:
            node = podutil.spec(pod).get("nodeName")
            if node:
                if self.nodes.store.get(str(node)) is not None:
                    continue
                try:
                    self.client.get("Node", str(node))
                    continue
                except errors.NotFound:
                    self._force(pod, "orphaned")
            elif podutil.is_deleting(pod):
                self._force(pod, "unscheduled-terminating")
        return self.config.pod_gc_period


def init(ctx: ControllerContext) -> Controller:
    return PodGCController(ctx)
