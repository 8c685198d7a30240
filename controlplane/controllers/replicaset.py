"""The ReplicaSet controller: keep `spec.replicas` pods matching the selector.

Pods belong to a ReplicaSet through their controller ownerReference; a
ReplicaSet adopts orphans its selector matches and releases pods whose labels
no longer match. Missing pods are created in slow-start batches (1, 2, 4, ...,
at most `burst_replicas` per sync) with expectations, so a second sync before
the informer has seen the new pods does not create duplicates; surplus pods
are deleted least valuable first (`ranking`). Status carries replicas,
fullyLabeledReplicas, readyReplicas, availableReplicas (minReadySeconds) and
observedGeneration. Never writes a pod another controller owns.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.client.selectors import Selector
from controlplane.client.store import object_key
from controlplane.controllers import podutil, ranking
from controlplane.controllers.base import (
    CLAIMABLE,
    CONTROLLER_UID,
    ORPHANS,
    Controller,
    ControllerContext,
    Expectations,
)
from controlplane.controllers.refmanager import ControllerRefManager

log = logging.getLogger(__name__)


def pod_from_template(owner: Mapping[str, Any], generate_name: str) -> Object:
    """A new Pod for `owner` from its spec.template (labels, annotations, spec)."""
    template = podutil.spec(owner).get("template") or {}
    tmeta = template.get("metadata") or {}
    meta: Object = {
        "generateName": generate_name,
        "namespace": podutil.namespace_of(owner),
        "labels": dict(tmeta.get("labels") or {}),
        "ownerReferences": [podutil.owner_ref(owner)],
    }
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    if tmeta.get("finalizers"):
        meta["finalizers"] = list(tmeta["finalizers"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


class PodOwnerController(Controller):
    """Shared machinery of controllers that own pods directly (ReplicaSet, Job, ...)."""

    owner_kind = "ReplicaSet"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.expectations = Expectations(ctx.clock)
        self.refs = ControllerRefManager(ctx.client, self.owner_kind, "Pod")
        self.owners = self.watch(self.owner_kind)
        self.pods = self.watch("Pod", CLAIMABLE)
        self.follow(self.owners, self.enqueue, self._owner_deleted)
        self.pods.add_event_handler(
            on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_deleted
        )

    def selector(self, owner: Mapping[str, Any]) -> Selector:
        """The owner's pod selector (a LabelSelector at spec.selector)."""
        return podutil.selector_of(owner)

    # ---- handlers ---------------------------------------------------------

    def _owner_deleted(self, obj: Object) -> None:
        self.expectations.delete(object_key(obj))
        self.enqueue(obj)

    def _owner_key(self, pod: Mapping[str, Any]) -> str | None:
        ref = podutil.controller_ref(pod)
        if ref is None or ref.get("kind") != self.owner_kind:
            return None
        ns = podutil.namespace_of(pod)
        owner = self.owners.store.get(str(ref.get("name")), ns)
        if owner is None or podutil.uid_of(owner) != ref.get("uid"):
            return None
        return object_key(owner)

    def _matching_owners(self, pod: Mapping[str, Any]) -> list[str]:
        labels = podutil.labels_of(pod)
        return [
            object_key(o)
            for o in self.owners.store.list(podutil.namespace_of(pod))
            if self.selector(o).matches(labels)
        ]

    def _pod_added(self, pod: Object) -> None:
        if podutil.is_deleting(pod):
            self._pod_deleted(pod)
            return
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.creation_observed(key)
            self.enqueue_key(key)
        elif podutil.controller_ref(pod) is None:
            for k in self._matching_owners(pod):
                self.enqueue_key(k)

    def _pod_updated(self, old: Object, new: Object) -> None:
        if podutil.meta(old).get("resourceVersion") == podutil.meta(new).get("resourceVersion"):
            return  # a resync: owners get their own resync
        if podutil.is_deleting(new) and not podutil.is_deleting(old):
            key = self._owner_key(new)
            if key is not None:
                self.expectations.deletion_observed(key, podutil.uid_of(new))
                self.enqueue_key(key)
            return
        if podutil.labels_of(old) == podutil.labels_of(new) and podutil.controller_ref(
            old
        ) == podutil.controller_ref(new):
            key = self._owner_key(new)
            if key is None:
                return
            delay = self._status_delay(key, old, new)
            if delay is not None:
                self.enqueue_after(key, delay)
                self._after_ready(key, old, new)
            return
        keys = {self._owner_key(new), self._owner_key(old)}
        if podutil.controller_ref(new) is None:
            keys.update(self._matching_owners(new))
        for k in keys:
            if k is not None:
                self.enqueue_key(k)
                self._after_ready(k, old, new)

    def _status_delay(self, key: str, old: Object, new: Object) -> float | None:
        """How soon a pod's status change (same labels and owner) must reach
        its owner's sync: 0 at once, a delay to fold several into one sync,
        None when the owner does not look at what changed. By default at once."""
        return 0.0

    def _after_ready(self, key: str, old: Object, new: Object) -> None:
        if podutil.is_ready(new) and not podutil.is_ready(old):
            owner = self.owners.store.get_by_key(key)
            mrs = int(podutil.spec(owner).get("minReadySeconds") or 0) if owner else 0
            if mrs > 0:
                self.enqueue_after(key, mrs + 1)

    def _pod_deleted(self, pod: Object) -> None:
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.deletion_observed(key, podutil.uid_of(pod))
            self.enqueue_key(key)

    # ---- claiming ---------------------------------------------------------

    def claim_pods(self, owner: Object) -> list[Object]:
        """Pods `owner` controls after adopting matching orphans and releasing
        pods that stopped matching (ControllerRefManager.ClaimPods)."""
        selector = self.selector(owner)
        ns = podutil.namespace_of(owner)
        # Only orphans can be adopted: the index spares a walk over every pod
        # of the namespace on each sync.
        orphans = [] if selector.empty() else self.pods.store.by_index(ORPHANS, ns)
        return self.refs.claim(
            owner,
            self.pods.store.by_index(CONTROLLER_UID, podutil.uid_of(owner)),
            orphans,
            lambda pod: selector.matches(podutil.labels_of(pod)),
        )

    # ---- creating and deleting ------------------------------------------------

    def selector_matches_template(
        self, owner: Object, labels: Mapping[str, str] | None = None
    ) -> bool:
        """Pods made from the template must match the selector, or the owner
        would create them forever; report it once per sync instead."""
        labels = podutil.pod_template_labels(owner) if labels is None else labels
        if self.selector(owner).matches(labels) and not self.selector(owner).empty():
            return True
        self.recorder.event(
            owner,
            "Warning",
            "SelectorMismatch",
            "spec.selector does not match the labels of spec.template.metadata; no pods created",
        )
        return False

    def create_pods(self, key: str, owner: Object, count: int, make: Any = None) -> None:
        """Create `count` pods in slow-start batches with expectations."""
        if not self.selector_matches_template(owner, podutil.labels_of(make(0)) if make else None):
            return
        count = min(count, self.config.burst_replicas)
        self.expectations.expect_creations(key, count)
        name = podutil.name_of(owner)
        build = make or (lambda i: pod_from_template(owner, f"{name}-"))

        ns = podutil.namespace_of(owner)

        # One call per pod, not create_many: batched creates (30 ReplicaSets
        # of 1,000) outran every pod watcher until the API server dropped one
        # 10,000 events behind; one call each is paced by the API server.
        def create(i: int) -> None:
            self.client.create("Pod", build(i), ns)

        done, errs = self.slow_start(count, create)
        if errs:
            skipped = count - done
            self.expectations.creation_observed(key, skipped)
            self.recorder.event(owner, "Warning", "FailedCreate", f"Error creating: {errs[0]}")
            raise errs[0]
        if count:
            self.recorder.event(owner, "Normal", "SuccessfulCreate", f"Created {count} pod(s)")

    def delete_pods(self, key: str, owner: Object, pods: list[Object]) -> None:
        if not pods:
            return
        self.expectations.expect_deletions(key, [podutil.uid_of(p) for p in pods])

        def delete(pod: Object) -> None:
            try:
                self.delete_pod(pod)
            except Exception:
                self.expectations.deletion_observed(key, podutil.uid_of(pod))
                raise

        errs = [e for e in self.run_parallel(delete, pods) if not isinstance(e, errors.NotFound)]
        if errs:
            self.recorder.event(owner, "Warning", "FailedDelete", f"Error deleting: {errs[0]}")
            raise errs[0]
        self.recorder.event(owner, "Normal", "SuccessfulDelete", f"Deleted {len(pods)} pod(s)")


class ReplicaSetController(PodOwnerController):
    name = "replicaset"
    default_workers = 5
    owner_kind = "ReplicaSet"

    # A ReplicaSet of n pods syncs in O(n); readiness changes of its pods are
    # folded into one sync per n * STATUS_BATCH_PER_POD seconds (at most
    # STATUS_BATCH_MAX), so a large ReplicaSet whose pods turn Ready one by one
    # costs a bounded share of a core instead of one full sync per pod; one of
    # fewer than STATUS_BATCH_MIN_PODS pods reports at once, as before.
    # Kubernetes' Job controller batches pod updates the same way
    # (syncJobBatchPeriod).
    STATUS_BATCH_PER_POD = 0.001
    STATUS_BATCH_MAX = 1.0
    STATUS_BATCH_MIN_PODS = 50

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self._sizes: dict[str, int] = {}  # key -> pods it claimed at its last sync

    def _status_delay(self, key: str, old: Object, new: Object) -> float | None:
        if podutil.is_active(old) != podutil.is_active(new):
            return 0.0  # finished: it may need a replacement
        if podutil.condition(old, "Ready") == podutil.condition(new, "Ready"):
            return None  # bound, phase Running, container states: not in the status
        size = self._sizes.get(key, 0)
        if size < self.STATUS_BATCH_MIN_PODS:
            return 0.0
        return min(self.STATUS_BATCH_MAX, size * self.STATUS_BATCH_PER_POD)

    def sync(self, key: str) -> float | None:
        rs = self.owners.store.get_by_key(key)
        if rs is None:
            self.expectations.delete(key)
            self._sizes.pop(key, None)
            return None
        needs_sync = self.expectations.satisfied(key)
        pods = self.claim_pods(rs)
        self._sizes[key] = len(pods)
        active = [p for p in pods if podutil.is_active(p)]
        if needs_sync and not podutil.is_deleting(rs):
            self.manage_replicas(key, rs, active)
        return self.update_status(rs, pods, active)

    def manage_replicas(self, key: str, rs: Object, active: list[Object]) -> None:
        want = int(podutil.spec(rs).get("replicas", 1))
        if want < 0:
            self.recorder.event(
                rs, "Warning", "InvalidReplicas", f"spec.replicas: {want} must be >= 0"
            )
            want = 0
        diff = len(active) - want
        if diff < 0:
            self.create_pods(key, rs, -diff)
        elif diff > 0:
            victims = ranking.pods_to_delete(active, min(diff, self.config.burst_replicas))
            self.delete_pods(key, rs, [dict(p) for p in victims])

    def update_status(self, rs: Object, pods: list[Object], active: list[Object]) -> float | None:
        now = self.clock.now()
        mrs = int(podutil.spec(rs).get("minReadySeconds") or 0)
        template_labels = podutil.pod_template_labels(rs)
        ready = [p for p in active if podutil.is_ready(p)]
        available = [p for p in ready if podutil.is_available(p, mrs, now)]
        fully = [
            p
            for p in active
            if all(podutil.labels_of(p).get(k) == v for k, v in template_labels.items())
        ]
        old = dict(podutil.status(rs))
        new = dict(old)
        new.update(
            {
                "replicas": len(active),
                "fullyLabeledReplicas": len(fully),
                "readyReplicas": len(ready),
                "availableReplicas": len(available),
                "observedGeneration": podutil.meta(rs).get("generation", 0),
            }
        )
        if not self.write_status(self.owner_kind, rs, new):
            return None
        if mrs > 0 and len(ready) > len(available):
            return float(mrs)
        return None


def init(ctx: ControllerContext) -> Controller:
    return ReplicaSetController(ctx)
