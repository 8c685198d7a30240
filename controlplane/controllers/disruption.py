"""The disruption controller: each PodDisruptionBudget's status, as
kube-controller-manager's.

For a budget, its pods are those of its namespace its selector matches (an
empty selector: all of them; none: no pods). Then (getExpectedPodCount):

- minAvailable as an integer: expectedPods is the number of pods,
  desiredHealthy minAvailable;
- minAvailable as a percentage, or maxUnavailable: expectedPods is the sum
  of the scale of the pods' controllers (ReplicaSet, or the Deployment
  owning it, StatefulSet, ReplicationController); desiredHealthy is the
  percentage of it rounded up, or expectedPods less maxUnavailable (a
  percentage rounded up). A pod with no such controller makes the sync
  fail (condition reason SyncFailed, no disruption allowed);

currentHealthy counts the Ready pods not being deleted and not recorded in
status.disruptedPods (pods the eviction API is removing; an entry is
dropped once its pod is gone or being deleted, or after
`DELETION_TIMEOUT`); disruptionsAllowed is currentHealthy -
desiredHealthy, at least 0, and the DisruptionAllowed condition says
whether it is more than 0 (SufficientPods / InsufficientPods). Every sync
computes from scratch, so a restart drifts nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from controlplane.api.selectors import SelectorError, from_structured
from controlplane.client.interface import Object
from controlplane.client.store import object_key
from controlplane.controllers import podutil
from controlplane.controllers.base import Controller, ControllerContext
from machinery.rfc3339 import parse_time

DELETION_TIMEOUT = 120.0  # seconds an evicted pod may take to start going
SCALED = ("ReplicaSet", "Deployment", "StatefulSet", "ReplicationController")


class SyncFailed(Exception):
    """The budget cannot be computed (its pods' controllers are not known)."""


def scaled(value: Any, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent."""
    if isinstance(value, str) and value.endswith("%"):
        exact = int(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value)


class DisruptionController(Controller):
    name = "disruption"
    default_workers = 2

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.budgets = self.watch_primary("PodDisruptionBudget")
        self.pods = self.watch("Pod")
        self.owners = {kind: self.watch(kind) for kind in SCALED}
        self.pods.add_event_handler(
            on_add=self._pod_changed,
            on_update=lambda old, new: self._pod_changed(new),
            on_delete=self._pod_changed,
        )
        for kind in SCALED:  # a controller's scale changes expectedPods
            self.follow(self.owners[kind], self._owner_changed)

    def _budgets_of(self, pod: Mapping[str, Any]) -> list[Object]:
        labels = podutil.labels_of(pod)
        found = []
        for pdb in self.budgets.store.list(podutil.namespace_of(pod)):
            selector = podutil.spec(pdb).get("selector")
            if selector is None:
                continue
            try:
                if from_structured(selector).matches(labels):
                    found.append(pdb)
            except SelectorError:
                continue
        return found

    def _pod_changed(self, pod: Object) -> None:
        for pdb in self._budgets_of(pod):
            self.enqueue(pdb)

    def _owner_changed(self, owner: Object) -> None:
        for pdb in self.budgets.store.list(podutil.namespace_of(owner)):
            self.enqueue(pdb)

    def pods_of(self, pdb: Object) -> list[Object]:
        selector = podutil.spec(pdb).get("selector")
        if selector is None:
            return []
        try:
            sel = from_structured(selector)
        except SelectorError:
            return []
        return [p for p in self.pods.store.list(podutil.namespace_of(pdb))
                if sel.matches(podutil.labels_of(p))]  # fmt: skip

    def _scale_of(self, pod: Object) -> tuple[str, int]:
        """(the uid of the pod's scaled controller, its replicas)."""
        ref = podutil.controller_ref(pod)
        ns = podutil.namespace_of(pod)
        if ref is None or ref.get("kind") not in SCALED:
            raise SyncFailed("found no controllers for pod " + repr(podutil.name_of(pod)))
        owner = self.owners[str(ref["kind"])].store.get(str(ref.get("name")), ns)
        if owner is None or podutil.uid_of(owner) != ref.get("uid"):
            raise SyncFailed(f"found no controllers for pod {podutil.name_of(pod)!r}")
        if ref["kind"] == "ReplicaSet":
            parent = podutil.controller_ref(owner)
            if parent is not None and parent.get("kind") == "Deployment":
                deployment = self.owners["Deployment"].store.get(str(parent.get("name")), ns)
                if deployment is not None and podutil.uid_of(deployment) == parent.get("uid"):
                    owner = deployment
        return podutil.uid_of(owner), int(podutil.spec(owner).get("replicas", 1))

    def expected(self, pdb: Object, pods: list[Object]) -> tuple[int, int]:
        """(expectedPods, desiredHealthy)."""
        spec = podutil.spec(pdb)
        min_available = spec.get("minAvailable")
        max_unavailable = spec.get("maxUnavailable")
        if max_unavailable is None and isinstance(min_available, int):
            return len(pods), min_available
        scales = dict(self._scale_of(p) for p in pods)
        expected = sum(scales.values())
        if max_unavailable is not None:
            return expected, max(0, expected - scaled(max_unavailable, expected, True))
        if min_available is None:
            return expected, expected  # neither: Kubernetes' default minAvailable 1
        return expected, scaled(min_available, expected, True)

    def sync(self, key: str) -> float | None:
        pdb = self.budgets.store.get_by_key(key)
        if pdb is None:
            return None
        now = self.clock.now()
        pods = self.pods_of(pdb)
        old = dict(podutil.status(pdb))
        by_name = {podutil.name_of(p): p for p in pods}
        disrupted: dict[str, str] = {}
        recheck: float | None = None
        for name, stamp in (old.get("disruptedPods") or {}).items():
            pod = by_name.get(name)
            if pod is None or podutil.is_deleting(pod):
                continue
            at = parse_time(str(stamp))
            if at is None:
                continue
            if at + DELETION_TIMEOUT <= now:
                continue  # the eviction's delete never came
            disrupted[name] = str(stamp)
            left = at + DELETION_TIMEOUT - now
            recheck = left if recheck is None else min(recheck, left)
        healthy = sum(
            1 for p in pods
            if podutil.is_ready(p) and not podutil.is_deleting(p)
            and podutil.name_of(p) not in disrupted
        )  # fmt: skip
        conditions = list(old.get("conditions") or [])
        try:
            expected, desired = self.expected(pdb, pods)
        except SyncFailed as err:
            expected, desired, allowed = 0, 0, 0
            conditions = podutil.set_condition(
                conditions, "DisruptionAllowed", "False", "SyncFailed", str(err), now
            )
        else:
            allowed = max(0, healthy - desired)
            conditions = podutil.set_condition(
                conditions, "DisruptionAllowed", "True" if allowed > 0 else "False",
                "SufficientPods" if allowed > 0 else "InsufficientPods", "", now,
            )  # fmt: skip
        generation = podutil.meta(pdb).get("generation", 1)
        conditions = [{**c, "observedGeneration": generation} for c in conditions]
        new: dict[str, Any] = {
            "observedGeneration": generation,
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "conditions": conditions,
        }
        if disrupted:
            new["disruptedPods"] = disrupted
        if new != old:
            self.write_status("PodDisruptionBudget", pdb, new, at_read_version=True)
        if recheck is not None:
            self.enqueue_after(object_key(pdb), recheck)
        return None


def init(ctx: ControllerContext) -> Controller:
    return DisruptionController(ctx)
