"""The Deployment controller: roll pod templates out through ReplicaSets.

One ReplicaSet per pod template, named `<deployment>-<pod-template-hash>`
and labelled/selected with that hash; revisions in the
`deployment.kubernetes.io/revision` annotation. Per sync, as Kubernetes:
claim ReplicaSets (adopt/release); roll back if asked (annotation
`deprecated.deployment.rollback.to`, 0 meaning the previous revision; an
unknown revision is reported as a RollbackRevisionNotFound event and
dropped); when paused or when only the replica count changed, scale
(proportionally across the active ReplicaSets mid-rollout); otherwise step a
RollingUpdate (new ReplicaSet up within maxSurge, old ones down within
maxUnavailable) or a Recreate (old to zero, wait for their pods to go, new
up). Old ReplicaSets beyond revisionHistoryLimit are deleted once complete.
Status carries replica counts and the Available and Progressing conditions
(progressDeadlineSeconds → ProgressDeadlineExceeded). The arithmetic lives
in `rollout`; this module only reads caches and writes through the client.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.client.store import object_key
from controlplane.controllers import deployment_status, podutil, rollout
from controlplane.controllers.base import (
    CONTROLLER_UID,
    Controller,
    ControllerContext,
    controller_uid_index,
)
from controlplane.controllers.refmanager import ControllerRefManager
from controlplane.controllers.rollout import RS

log = logging.getLogger(__name__)


def _annotations(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict(podutil.annotations_of(obj))


def _as_rs(rs: Mapping[str, Any]) -> RS:
    ann = podutil.annotations_of(rs)

    def intval(key: str) -> int | None:
        try:
            return int(ann[key]) if key in ann else None
        except ValueError:
            return None

    st = podutil.status(rs)
    return RS(
        name=podutil.name_of(rs),
        replicas=int(podutil.spec(rs).get("replicas", 0)),
        available=int(st.get("availableReplicas") or 0),
        created=podutil.created_at(rs),
        revision=rollout.revision_of(ann),
        desired_annotation=intval(rollout.DESIRED_REPLICAS),
        max_annotation=intval(rollout.MAX_REPLICAS),
        status_replicas=int(st.get("replicas") or 0),
    )


class DeploymentController(Controller):
    name = "deployment"
    default_workers = 5

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.deployments = self.watch_primary("Deployment")
        self.rss = self.watch("ReplicaSet", {CONTROLLER_UID: controller_uid_index})
        self.refs = ControllerRefManager(ctx.client, "Deployment", "ReplicaSet")
        self.pods = self.watch("Pod", {CONTROLLER_UID: controller_uid_index})
        self.rss.add_event_handler(
            on_add=self._rs_changed,
            on_update=self._rs_updated,
            on_delete=self._rs_changed,
        )
        self.pods.add_event_handler(on_delete=self._pod_deleted)

    def _owner_of(self, rs: Mapping[str, Any]) -> str | None:
        ref = podutil.controller_ref(rs)
        if ref is None or ref.get("kind") != "Deployment":
            return None
        d = self.deployments.store.get(str(ref.get("name")), podutil.namespace_of(rs))
        if d is None or podutil.uid_of(d) != ref.get("uid"):
            return None
        return object_key(d)

    def _rs_updated(self, old: Object, new: Object) -> None:
        if podutil.controller_ref(old) != podutil.controller_ref(new):
            self._rs_changed(old)
        self._rs_changed(new)

    def _rs_changed(self, rs: Object) -> None:
        key = self._owner_of(rs)
        if key is not None:
            self.enqueue_key(key)
            return
        if podutil.controller_ref(rs) is None:
            labels = podutil.labels_of(rs)
            for d in self.deployments.store.list(podutil.namespace_of(rs)):
                if podutil.selector_of(d).matches(labels):
                    self.enqueue(d)

    def _pod_deleted(self, pod: Object) -> None:
        # Recreate waits for old pods to be gone.
        ref = podutil.controller_ref(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return
        rs = self.rss.store.get(str(ref.get("name")), podutil.namespace_of(pod))
        if rs is not None:
            key = self._owner_of(rs)
            if key is not None:
                d = self.deployments.store.get_by_key(key)
                if (
                    d is not None
                    and (podutil.spec(d).get("strategy") or {}).get("type") == "Recreate"
                ):
                    self.enqueue_key(key)

    # ---- claiming -------------------------------------------------------------

    def _claim(self, d: Object) -> list[Object]:
        """The ReplicaSets `d` controls, through the shared ControllerRefManager
        (adoption re-checks the Deployment live, with a resourceVersion precondition)."""
        selector = podutil.selector_of(d)
        ns = podutil.namespace_of(d)
        orphans = [] if selector.empty() else self.rss.store.list(ns, selector)
        return self.refs.claim(
            d,
            self.rss.store.by_index(CONTROLLER_UID, podutil.uid_of(d)),
            orphans,
            lambda rs: selector.matches(podutil.labels_of(rs)),
        )

    # ---- sync -------------------------------------------------------------------

    def sync(self, key: str) -> float | None:
        d = self.deployments.store.get_by_key(key)
        if d is None:
            return None
        d = copy.deepcopy(d)
        spec = podutil.spec(d)
        if not spec.get("selector") or podutil.selector_of(d).empty():
            self.recorder.event(
                d,
                "Warning",
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )
            return None
        try:
            kind, surge, unavailable = rollout.strategy_params(d)
        except ValueError as err:
            self.recorder.event(d, "Warning", "InvalidStrategy", str(err))
            return None
        if not podutil.selector_of(d).matches(podutil.pod_template_labels(d)):
            self.recorder.event(
                d,
                "Warning",
                "SelectorMismatch",
                "spec.selector does not match the labels of spec.template.metadata",
            )
            return None
        if int(spec.get("replicas", 1)) < 0:
            self.recorder.event(d, "Warning", "InvalidReplicas", "spec.replicas must be >= 0")
            return None
        rss = self._claim(d)
        if podutil.is_deleting(d):
            return self._sync_status(d, rss, None)
        ann = podutil.annotations_of(d)
        if rollout.ROLLBACK_TO in ann:
            self._rollback(d, rss, ann[rollout.ROLLBACK_TO])
            return None
        new, old = self._split(d, rss)
        if spec.get("paused") or self._is_scaling_event(d, rss):
            # Only the replica count is acted on: no new ReplicaSet while paused.
            new = self._ensure_new(d, new, old, create=False)
            self._scale(d, new, old, kind, surge)
            if spec.get("paused") and new is not None and self._complete(d, new, old):
                self._cleanup(d, old)
            return self._sync_status(d, self._owned_now(d), new)
        if kind == "Recreate":
            return self._rollout_recreate(d, new, old)
        return self._rollout_rolling(d, new, old, surge, unavailable)

    def _owned_now(self, d: Object) -> list[Object]:
        ns = podutil.namespace_of(d)
        return [
            r
            for r in self.rss.store.by_index(CONTROLLER_UID, podutil.uid_of(d))
            if podutil.namespace_of(r) == ns
        ]

    def _split(self, d: Object, rss: list[Object]) -> tuple[Object | None, list[Object]]:
        template = podutil.spec(d).get("template") or {}
        matches = sorted(
            (
                r
                for r in rss
                if rollout.template_equal(podutil.spec(r).get("template") or {}, template)
            ),
            key=lambda r: (podutil.created_at(r), podutil.name_of(r)),
        )
        new = matches[0] if matches else None
        old = [r for r in rss if new is None or podutil.uid_of(r) != podutil.uid_of(new)]
        return new, old

    def _is_scaling_event(self, d: Object, rss: list[Object]) -> bool:
        want = int(podutil.spec(d).get("replicas", 1))
        for rs in rss:
            if int(podutil.spec(rs).get("replicas", 0)) <= 0:
                continue
            desired = podutil.annotations_of(rs).get(rollout.DESIRED_REPLICAS)
            if desired is not None and desired != str(want):
                return True
        return False

    # ---- the new ReplicaSet ---------------------------------------------------------

    def _ensure_new(
        self, d: Object, new: Object | None, old: list[Object], create: bool
    ) -> Object | None:
        revision = rollout.next_revision([_as_rs(r) for r in old])
        _, surge, _ = rollout.strategy_params(d)
        want = int(podutil.spec(d).get("replicas", 1))
        if new is not None:
            ann = _annotations(new)
            changed = False
            if rollout.revision_of(ann) < revision:
                previous = ann.get(rollout.REVISION)
                if previous:  # a rollback to this ReplicaSet: its old revision kept
                    history = rollout.revision_history(
                        ann.get(rollout.REVISION_HISTORY, ""), previous
                    )
                    if history is not None:
                        ann[rollout.REVISION_HISTORY] = history
                ann[rollout.REVISION] = str(revision)
                changed = True
            for k, v in (
                (rollout.DESIRED_REPLICAS, str(want)),
                (rollout.MAX_REPLICAS, str(want + surge)),
            ):
                if k not in ann:
                    ann[k] = v
                    changed = True
            mrs = podutil.spec(d).get("minReadySeconds", 0)
            if changed or podutil.spec(new).get("minReadySeconds", 0) != mrs:
                update = copy.deepcopy(new)
                update["metadata"]["annotations"] = ann
                update["spec"]["minReadySeconds"] = mrs
                update["metadata"].pop("resourceVersion", None)
                new = self.client.update("ReplicaSet", update)
            self._set_deployment_revision(d, rollout.revision_of(_annotations(new)))
            return new
        if not create:
            return None
        collision = int(podutil.status(d).get("collisionCount") or 0)
        template = copy.deepcopy(podutil.spec(d).get("template") or {})
        hash_ = rollout.template_hash(template, collision)
        template.setdefault("metadata", {}).setdefault("labels", {})[rollout.POD_TEMPLATE_HASH] = (
            hash_
        )
        selector = copy.deepcopy(podutil.spec(d).get("selector") or {})
        selector.setdefault("matchLabels", {})[rollout.POD_TEMPLATE_HASH] = hash_
        all_rs = [_as_rs(r) for r in old]
        replicas = rollout.new_rs_replicas(
            want, rollout.strategy_params(d)[0], surge, RS("", 0), all_rs
        )
        ann = {
            k: v
            for k, v in podutil.annotations_of(d).items()
            if k
            not in (
                rollout.REVISION,
                rollout.REVISION_HISTORY,
                "kubectl.kubernetes.io/last-applied-configuration",
            )
        }
        ann.update(
            {
                rollout.REVISION: str(revision),
                rollout.DESIRED_REPLICAS: str(want),
                rollout.MAX_REPLICAS: str(want + surge),
            }
        )
        body: Object = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{podutil.name_of(d)}-{hash_}",
                "namespace": podutil.namespace_of(d),
                "labels": dict(template["metadata"]["labels"]),
                "annotations": ann,
                "ownerReferences": [podutil.owner_ref(d)],
            },
            "spec": {
                "replicas": replicas,
                "minReadySeconds": podutil.spec(d).get("minReadySeconds", 0),
                "selector": selector,
                "template": template,
            },
        }
        try:
            created = self.client.create("ReplicaSet", body, podutil.namespace_of(d))
        except errors.AlreadyExists:
            existing = self.client.get(
                "ReplicaSet", body["metadata"]["name"], podutil.namespace_of(d)
            )
            if podutil.is_controlled_by(existing, d) and rollout.template_equal(
                podutil.spec(existing).get("template") or {}, template
            ):
                return existing
            # A hash collision: bump collisionCount so the next sync picks another name.
            st = dict(podutil.status(d))
            st["collisionCount"] = collision + 1
            body2 = copy.deepcopy(d)
            body2["status"] = st
            body2["metadata"].pop("resourceVersion", None)
            self.client.update_status("Deployment", body2)
            raise errors.Conflict(
                f"replicaset name collision for {body['metadata']['name']}"
            ) from None
        self.recorder.event(
            d,
            "Normal",
            "ScalingReplicaSet",
            f"Scaled up replica set {podutil.name_of(created)} to {replicas}",
        )
        self._set_deployment_revision(d, revision)
        self._progress_condition(
            d,
            "True",
            "NewReplicaSetCreated",
            f'Created new replica set "{podutil.name_of(created)}"',
        )
        return created

    def _set_deployment_revision(self, d: Object, revision: int) -> None:
        ann = podutil.annotations_of(d)
        if ann.get(rollout.REVISION) == str(revision):
            return
        try:
            updated = self.client.patch(
                "Deployment",
                podutil.name_of(d),
                {"metadata": {"annotations": {rollout.REVISION: str(revision)}}},
                podutil.namespace_of(d),
            )
            d["metadata"] = updated["metadata"]
        except errors.NotFound:
            pass

    def _progress_condition(self, d: Object, status: str, reason: str, message: str) -> None:
        st = dict(podutil.status(d))
        st["conditions"] = podutil.set_condition(
            st.get("conditions"), "Progressing", status, reason, message, self.clock.now(), True
        )
        d["status"] = st

    # ---- scaling -------------------------------------------------------------------

    def _scale_rs(self, d: Object, rs: Object, replicas: int) -> Object:
        _, surge, _ = rollout.strategy_params(d)
        want = int(podutil.spec(d).get("replicas", 1))
        ann = _annotations(rs)
        size_change = int(podutil.spec(rs).get("replicas", 0)) != replicas
        new_ann = dict(ann)
        new_ann[rollout.DESIRED_REPLICAS] = str(want)
        new_ann[rollout.MAX_REPLICAS] = str(want + surge)
        if not size_change and new_ann == ann:
            return rs
        body = copy.deepcopy(rs)
        body["spec"]["replicas"] = replicas
        body["metadata"]["annotations"] = new_ann
        updated = self.client.update("ReplicaSet", body)
        if size_change:
            verb = "up" if replicas > int(podutil.spec(rs).get("replicas", 0)) else "down"
            self.recorder.event(
                d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {verb} replica set {podutil.name_of(rs)} to {replicas}",
            )
        return updated

    def _scale(
        self, d: Object, new: Object | None, old: list[Object], kind: str, surge: int
    ) -> None:
        want = int(podutil.spec(d).get("replicas", 1))
        changes = rollout.proportional_scale(
            want,
            surge,
            _as_rs(new) if new is not None else None,
            [_as_rs(r) for r in old],
            kind,
            int(podutil.status(d).get("replicas") or 0),
        )
        by_name = {podutil.name_of(r): r for r in [*old, *([new] if new else [])]}
        # Scale down first so the total stays within bounds.
        for name, n in sorted(
            changes.items(),
            key=lambda kv: kv[1] - int(podutil.spec(by_name[kv[0]]).get("replicas", 0)),
        ):
            self._scale_rs(d, by_name[name], n)
        # Refresh annotations on the rest so the scaling event ends.
        for rs in by_name.values():
            if podutil.name_of(rs) not in changes and int(podutil.spec(rs).get("replicas", 0)) > 0:
                self._scale_rs(d, rs, int(podutil.spec(rs).get("replicas", 0)))

    # ---- strategies ---------------------------------------------------------------

    def _rollout_rolling(
        self, d: Object, new: Object | None, old: list[Object], surge: int, unavailable: int
    ) -> float | None:
        new = self._ensure_new(d, new, old, create=True)
        assert new is not None
        want = int(podutil.spec(d).get("replicas", 1))
        new_rs = _as_rs(new)
        all_rs = [new_rs, *(_as_rs(r) for r in old)]
        if new_rs.replicas > want:
            self._scale_rs(d, new, want)
            return self._sync_status(d, self._owned_now(d), new)
        if new_rs.replicas < want:
            target = rollout.new_rs_replicas(want, "RollingUpdate", surge, new_rs, all_rs)
            if target != new_rs.replicas:
                self._scale_rs(d, new, target)
                return self._sync_status(d, self._owned_now(d), new)
        changes = rollout.old_rs_scale_down(want, unavailable, new_rs, [_as_rs(r) for r in old])
        if changes:
            by_name = {podutil.name_of(r): r for r in old}
            for name, n in changes.items():
                self._scale_rs(d, by_name[name], n)
            return self._sync_status(d, self._owned_now(d), new)
        if self._complete(d, new, old):
            self._cleanup(d, old)
        return self._sync_status(d, self._owned_now(d), new)

    def _rollout_recreate(self, d: Object, new: Object | None, old: list[Object]) -> float | None:
        new = self._ensure_new(d, new, old, create=False)
        scaled = False
        for rs in old:
            if int(podutil.spec(rs).get("replicas", 0)) > 0:
                self._scale_rs(d, rs, 0)
                scaled = True
        if scaled:
            return self._sync_status(d, self._owned_now(d), new)
        # Wait until every old pod is gone (or finished).
        for rs in old:
            for pod in self.pods.store.by_index(CONTROLLER_UID, podutil.uid_of(rs)):
                if not podutil.is_terminated(pod):
                    return self._sync_status(d, self._owned_now(d), new)
        if new is None:
            new = self._ensure_new(d, None, old, create=True)
            assert new is not None
        want = int(podutil.spec(d).get("replicas", 1))
        if int(podutil.spec(new).get("replicas", 0)) != want:
            new = self._scale_rs(d, new, want)
        if self._complete(d, new, old):
            self._cleanup(d, old)
        return self._sync_status(d, self._owned_now(d), new)

    def _complete(self, d: Object, new: Object, old: list[Object]) -> bool:
        want = int(podutil.spec(d).get("replicas", 1))
        st = podutil.status(new)
        return (
            int(podutil.spec(new).get("replicas", 0)) == want
            and int(st.get("availableReplicas") or 0) == want
            and int(st.get("replicas") or 0) == want
            and all(int(podutil.status(r).get("replicas") or 0) == 0 for r in old)
        )

    def _cleanup(self, d: Object, old: list[Object]) -> None:
        limit = podutil.spec(d).get("revisionHistoryLimit")
        if limit is None:
            limit = 10
        alive = [r for r in old if not podutil.is_deleting(r)]
        for name in rollout.history_to_delete([_as_rs(r) for r in alive], int(limit)):
            try:
                self.client.delete("ReplicaSet", name, podutil.namespace_of(d))
            except errors.NotFound:
                pass

    # ---- rollback -------------------------------------------------------------------

    def _rollback(self, d: Object, rss: list[Object], target: str) -> None:
        try:
            revision = int(target)
        except ValueError:
            revision = -1
        revisions = sorted(
            {rollout.revision_of(podutil.annotations_of(r)) for r in rss}, reverse=True
        )
        if revision == 0:
            revision = revisions[1] if len(revisions) > 1 else -1
            if revision == -1:
                self.recorder.event(
                    d, "Warning", "RollbackRevisionNotFound", "Unable to find last revision."
                )
        chosen = next(
            (r for r in rss if rollout.revision_of(podutil.annotations_of(r)) == revision), None
        )
        body = copy.deepcopy(d)
        body["metadata"]["annotations"].pop(rollout.ROLLBACK_TO, None)
        if chosen is None:
            if revision != -1 or target != "0":
                self.recorder.event(
                    d,
                    "Warning",
                    "RollbackRevisionNotFound",
                    f"Unable to find the revision to rollback to: {target}",
                )
        else:
            template = copy.deepcopy(podutil.spec(chosen).get("template") or {})
            (template.get("metadata") or {}).get("labels", {}).pop(rollout.POD_TEMPLATE_HASH, None)
            if rollout.template_equal(template, podutil.spec(d).get("template") or {}):
                self.recorder.event(
                    d,
                    "Warning",
                    "RollbackTemplateUnchanged",
                    f"The rollback revision contains the same template as current deployment {podutil.name_of(d)!r}",
                )
            else:
                body["spec"]["template"] = template
                self.recorder.event(
                    d,
                    "Normal",
                    "DeploymentRollback",
                    f"Rolled back deployment {podutil.name_of(d)!r} to revision {revision}",
                )
        body["metadata"].pop("resourceVersion", None)
        self.client.update("Deployment", body)

    # ---- status ---------------------------------------------------------------------

    def _sync_status(self, d: Object, rss: list[Object], new: Object | None) -> float | None:
        plan = deployment_status.plan_status(d, rss, new, self.clock.now())
        if plan.deadline_exceeded:
            self.recorder.event(
                d,
                "Warning",
                "ProgressDeadlineExceeded",
                f"Deployment {podutil.name_of(d)!r} has timed out progressing.",
            )
        if plan.status != podutil.status(self.deployments.store.get_by_key(object_key(d)) or d):
            body = copy.deepcopy(d)
            body["status"] = plan.status
            body["metadata"].pop("resourceVersion", None)
            try:
                self.client.update_status("Deployment", body)
            except errors.NotFound:
                return None
        return plan.requeue


def init(ctx: ControllerContext) -> Controller:
    return DeploymentController(ctx)
