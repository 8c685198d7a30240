"""The StatefulSet controller: pods with stable names `<set>-<ordinal>`.

Pods 0..replicas-1 exist with their ordinal's name and the labels
`statefulset.kubernetes.io/pod-name` and `controller-revision-hash`: the
name of the ControllerRevision it was made from (history.py: one per
distinct template, `<set>-<hash>`, renumbered when the template returns to
it, pruned beyond `revisionHistoryLimit` unless a pod or the status uses
it). `status.updateRevision` is the template's revision,
`status.currentRevision` the one the set rolls from: pods below the
RollingUpdate `partition` are (re)made from the current revision, the
others from the update revision, and once every pod is updated and ready
the update revision becomes the current one. With OrderedReady, pod N is
created only when 0..N-1 are Running and Ready, and surplus pods are removed
one at a time from the highest ordinal, each only after the ones above it
are gone; with Parallel, all at once. A failed pod is deleted and recreated
with the same name. RollingUpdate replaces, from the highest ordinal down
to `partition`, one pod at a time whose revision differs, waiting for each
replacement to be Running and Ready; OnDelete leaves that to the user.
Never creates two pods with one ordinal; never adopts pods with another
controller.
Each ordinal's claims (`<template>-<set>-<ordinal>`, from
volumeClaimTemplates, see set_claims) are created before its pod and kept
when the pod goes or the set scales down, unless
persistentVolumeClaimRetentionPolicy says Delete.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.controllers import history, podutil, set_claims
from controlplane.controllers.base import Controller, ControllerContext
from controlplane.controllers.replicaset import PodOwnerController, pod_from_template

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
REVISION_LABEL = history.HASH_LABEL


def ordinal_of(set_name: str, pod_name: str) -> int | None:
    m = re.fullmatch(re.escape(set_name) + r"-(\d+)", pod_name)
    return int(m.group(1)) if m else None


def _running_ready(pod: Object) -> bool:
    return podutil.phase(pod) == "Running" and podutil.is_ready(pod)


class StatefulSetController(PodOwnerController):
    name = "statefulset"
    default_workers = 5
    owner_kind = "StatefulSet"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.claims = self.watch("PersistentVolumeClaim")
        self.claims.add_event_handler(on_delete=self._claim_gone)
        self.history = history.watched(self, self.owner_kind)

    def _revisions(self, sts: Object, revisions: list[Object]) -> tuple[Object, Object]:
        """(current, update) revisions, the update one made or renumbered as
        needed (Kubernetes' getStatefulSetRevisions)."""
        data = history.patch_of(sts)
        equal = [r for r in revisions if history.data_equal(r.get("data") or {}, data)]
        number = history.next_number(revisions)
        if equal and equal[-1] is revisions[-1]:
            update = equal[-1]
        elif equal:
            update = self.history.renumber(equal[-1], number)
        else:
            st = podutil.status(sts)
            collision = int(st.get("collisionCount") or 0)
            hash_ = history.hash_data(data, collision)
            name = history.revision_name(podutil.name_of(sts), hash_)
            revision = history.new_revision(sts, data, number, name, hash_, annotations=True)
            try:
                update = self.history.create(revision)
            except history.Collision:
                self.write_status("StatefulSet", sts, {**st, "collisionCount": collision + 1})
                raise
        wanted = podutil.status(sts).get("currentRevision")
        current = next((r for r in revisions if podutil.name_of(r) == wanted), update)
        return current, update

    def _truncate_history(
        self, sts: Object, revisions: list[Object], pods: list[Object], live: set[str]
    ) -> None:
        limit = podutil.spec(sts).get("revisionHistoryLimit")
        limit = limit if isinstance(limit, int) else 10
        live = live | {str(podutil.labels_of(p).get(REVISION_LABEL)) for p in pods}
        self.history.delete(history.to_prune(revisions, live, limit))

    def _claim_gone(self, claim: Object) -> None:
        for sts in self.owners.store.list(podutil.namespace_of(claim)):
            if set_claims.ordinal_of_claim(sts, podutil.name_of(claim)) is not None:
                self.enqueue(sts)

    def _new_pod(self, sts: Object, ordinal: int, revision: Object) -> Object:
        # The pod is made from its revision's template (ApplyRevision).
        versioned = {
            **sts,
            "spec": {**podutil.spec(sts), "template": history.template_of(revision)},
        }
        pod = pod_from_template(versioned, "")
        set_claims.add_claim_volumes(pod, sts, ordinal)
        name = f"{podutil.name_of(sts)}-{ordinal}"
        pod["metadata"].pop("generateName", None)
        pod["metadata"]["name"] = name
        labels = pod["metadata"].setdefault("labels", {})
        labels[POD_NAME_LABEL] = name
        labels[REVISION_LABEL] = podutil.name_of(revision)
        pod["spec"]["hostname"] = name
        service = podutil.spec(sts).get("serviceName")
        if service:
            pod["spec"]["subdomain"] = service
        return pod

    def sync(self, key: str) -> float | None:
        sts = self.owners.store.get_by_key(key)
        if sts is None:
            self.expectations.delete(key)
            return None
        sts = copy.deepcopy(sts)
        name = podutil.name_of(sts)
        spec = podutil.spec(sts)
        replicas = int(spec.get("replicas", 1))
        parallel = spec.get("podManagementPolicy") == "Parallel"
        strategy = spec.get("updateStrategy") or {}
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        revisions: list[Object] = []
        if podutil.is_deleting(sts):
            st = podutil.status(sts)
            update = {"metadata": {"name": st.get("updateRevision", "")}}
            current = {"metadata": {"name": st.get("currentRevision", "")}}
        else:
            revisions = self.history.owned(sts)
            current, update = self._revisions(sts, revisions)
        pods = self.claim_pods(sts)
        by_ordinal: dict[int, Object] = {}
        for p in pods:
            o = ordinal_of(name, podutil.name_of(p))
            if o is not None:
                by_ordinal[o] = p
        if (
            self.expectations.satisfied(key)
            and not podutil.is_deleting(sts)
            and self.selector_matches_template(sts)
        ):
            self._reconcile(
                key, sts, by_ordinal, replicas, parallel, strategy, partition, (current, update)
            )
            self._scaled_down_claims(sts, by_ordinal, replicas)
            # A pod still waiting for a node gets back a claim deleted under it.
            for o, p in by_ordinal.items():
                if o < replicas and not podutil.spec(p).get("nodeName"):
                    self._ensure_claims(sts, o)
        if revisions:
            live = {podutil.name_of(current), podutil.name_of(update)}
            self._truncate_history(sts, revisions, list(by_ordinal.values()), live)
        self._status(sts, list(by_ordinal.values()), strategy, current, update)
        return None

    def _create(self, key: str, sts: Object, ordinal: int, revision: Object) -> None:
        self._ensure_claims(sts, ordinal)
        self.expectations.expect_creations(key, 1)
        try:
            self.client.create(
                "Pod", self._new_pod(sts, ordinal, revision), podutil.namespace_of(sts)
            )
        except errors.AlreadyExists:
            self.expectations.creation_observed(key)
        except Exception:
            self.expectations.creation_observed(key)
            raise
        self.recorder.event(
            sts, "Normal", "SuccessfulCreate", f"create Pod {podutil.name_of(sts)}-{ordinal}"
        )

    def _delete(self, key: str, sts: Object, pod: Object) -> None:
        self.delete_pods(key, sts, [pod])

    def _ensure_claims(self, sts: Object, ordinal: int) -> None:
        """Create the ordinal's claims from volumeClaimTemplates; existing ones are kept."""
        ns = podutil.namespace_of(sts)
        for claim in set_claims.claims_for(sts, ordinal):
            existing = self.claims.store.get(claim["metadata"]["name"], ns)
            if existing is not None:
                if podutil.is_deleting(existing):
                    # As Kubernetes: no pod until the old claim is gone (retried).
                    raise errors.Conflict(
                        f"claim {claim['metadata']['name']} is being deleted; "
                        f"pod {podutil.name_of(sts)}-{ordinal} waits for it to go"
                    )
                continue
            try:
                self.client.create("PersistentVolumeClaim", claim, ns)
            except errors.AlreadyExists:
                continue
            self.recorder.event(
                sts, "Normal", "SuccessfulCreate",
                f"create Claim {claim['metadata']['name']} Pod {podutil.name_of(sts)}-{ordinal}",
            )  # fmt: skip

    def _scaled_down_claims(self, sts: Object, pods: dict[int, Object], replicas: int) -> None:
        """whenScaled Delete: the claims of ordinals above the replicas whose pods are gone."""
        ns = podutil.namespace_of(sts)
        for claim in set_claims.condemned_claims(sts, self.claims.store.list(ns), pods, replicas):
            try:
                self.client.delete("PersistentVolumeClaim", podutil.name_of(claim), ns)
            except errors.NotFound:
                continue
            self.recorder.event(
                sts, "Normal", "SuccessfulDelete", f"delete Claim {podutil.name_of(claim)}"
            )

    def _reconcile(
        self,
        key: str,
        sts: Object,
        pods: dict[int, Object],
        replicas: int,
        parallel: bool,
        strategy: Any,
        partition: int,
        revisions: tuple[Object, Object],
    ) -> None:
        current, update = revisions
        rolling = (strategy.get("type") or "RollingUpdate") == "RollingUpdate"
        revision = podutil.name_of(update)
        # Failed pods are replaced under the same name.
        for _, p in sorted(pods.items()):
            if podutil.phase(p) == "Failed" and not podutil.is_deleting(p):
                self._delete(key, sts, p)
                return
        for o in range(replicas):
            pod = pods.get(o)
            if pod is None:
                # newVersionedStatefulSetPod: below the partition, the current revision.
                self._create(key, sts, o, current if rolling and o < partition else update)
                if not parallel:
                    return
                continue
            if not parallel and (podutil.is_deleting(pod) or not _running_ready(pod)):
                return  # OrderedReady: wait for this one before going on
        # Surplus, highest ordinal first.
        surplus = sorted((o for o in pods if o >= replicas), reverse=True)
        if surplus:
            if parallel:
                self.delete_pods(
                    key, sts, [pods[o] for o in surplus if not podutil.is_deleting(pods[o])]
                )
                return
            top = pods[surplus[0]]
            if not podutil.is_deleting(top):
                self._delete(key, sts, top)
            return
        if not rolling:
            return
        for o in range(replicas - 1, partition - 1, -1):
            pod = pods.get(o)
            if pod is None:
                return
            if podutil.labels_of(pod).get(REVISION_LABEL) != revision:
                if not podutil.is_deleting(pod):
                    self._delete(key, sts, pod)
                return
            if not _running_ready(pod):
                return  # wait for the replacement before the next one

    def _status(
        self, sts: Object, pods: list[Object], strategy: Any, current: Object, update: Object
    ) -> None:
        active = [p for p in pods if not podutil.is_deleting(p)]
        ready = [p for p in active if podutil.is_ready(p)]
        now = self.clock.now()
        mrs = int(podutil.spec(sts).get("minReadySeconds") or 0)
        current_revision = podutil.name_of(current)
        update_revision = podutil.name_of(update)

        def counted(revision: str) -> int:
            return sum(1 for p in active if podutil.labels_of(p).get(REVISION_LABEL) == revision)

        updated = counted(update_revision)
        current_replicas = counted(current_revision)
        # completeRollingUpdate: every pod updated and ready, the update is current.
        if (
            (strategy.get("type") or "RollingUpdate") == "RollingUpdate"
            and updated == len(active)
            and len(ready) == len(active)
        ):
            current_revision, current_replicas = update_revision, updated
        st = dict(podutil.status(sts))
        st.update(
            {
                "observedGeneration": podutil.meta(sts).get("generation", 0),
                "replicas": len(active),
                "readyReplicas": len(ready),
                "availableReplicas": sum(1 for p in ready if podutil.is_available(p, mrs, now)),
                "currentReplicas": current_replicas,
                "updatedReplicas": updated,
                "currentRevision": current_revision,
                "updateRevision": update_revision,
            }
        )
        self.write_status("StatefulSet", sts, st)


def init(ctx: ControllerContext) -> Controller:
    return StatefulSetController(ctx)
