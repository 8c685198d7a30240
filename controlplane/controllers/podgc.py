"""Pod garbage collection: remove pods nobody will ever clean up.

Every `pod_gc_period` seconds (injected clock), one pass: delete terminated
pods (Succeeded/Failed) above `terminated_pod_gc_threshold`, oldest first;
force-delete pods bound to a Node that no longer exists; force-delete pods
marked for deletion that were never scheduled (no agent will confirm them).
It never touches a running pod on a live node.

A Node is taken for gone as Kubernetes' pod GC takes it: missing from the
cache, then still missing (checked live) QUARANTINE seconds after it was
first found missing. A pod bound to a Node that is about to register, or
whose creation the cache has not seen yet, is not deleted under it.
"""

from __future__ import annotations

from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.controllers import podutil
from controlplane.controllers.base import Controller, ControllerContext

KEY = "podgc"
QUARANTINE = 40.0  # Kubernetes' podgc quarantineTime


class PodGCController(Controller):
    name = "podgc"
    default_workers = 1

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.pods = self.watch("Pod")
        self.nodes = self.watch("Node")
        self.enqueue_key(KEY)
        self.deleted: list[str] = []
        # Node name -> when it was first found missing (clock.monotonic()).
        self._missing_since: dict[str, float] = {}

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
        gone = self._gone_nodes(pods)
        for pod in pods:
            node = podutil.spec(pod).get("nodeName")
            if node:
                if str(node) in gone:
                    self._force(pod, "orphaned")
            elif podutil.is_deleting(pod):
                self._force(pod, "unscheduled-terminating")
        return self.next_check()

    def _gone_nodes(self, pods: list[Object]) -> set[str]:
        """Nodes pods are bound to that were missing QUARANTINE seconds ago
        and are missing now, asked live; a node that turns up again leaves
        the quarantine."""
        now = self.clock.monotonic()
        missing = set()
        for pod in pods:
            node = str(podutil.spec(pod).get("nodeName") or "")
            if node and self.nodes.store.get(node) is None:
                missing.add(node)
                self._missing_since.setdefault(node, now)
        for node in set(self._missing_since) - missing:
            del self._missing_since[node]
        gone = set()
        for node in missing:
            if now - self._missing_since[node] < QUARANTINE:
                continue
            try:
                self.client.get("Node", node)
            except errors.NotFound:
                gone.add(node)
                continue
            del self._missing_since[node]
        return gone

    def next_check(self) -> float:
        """Seconds to the next pass: the period, or sooner when a quarantine ends."""
        period = self.config.pod_gc_period
        now = self.clock.monotonic()
        ends = [since + QUARANTINE - now for since in self._missing_since.values()]
        due = min((e for e in ends if e > 0), default=period)
        return max(1.0, min(period, due))


def init(ctx: ControllerContext) -> Controller:
    return PodGCController(ctx)
