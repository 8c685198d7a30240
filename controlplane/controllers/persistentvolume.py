"""The PersistentVolume controller (kube's persistentvolume-binder), with local-path provisioning.

Claims and volumes are two kinds of key in one queue (`claim:<ns>/<name>`,
`volume:<name>`), each reconciled by carrying out `pv_plan`'s decision:
binding (the volume's claimRef first, then the claim's volumeName, then
both statuses, so a crash half-way is finished by the next sync), phases
(Available, Bound, Released, Failed, Lost), reclaim (Retain keeps, Delete
removes the volume object: the agent of its node deletes the data and lifts
the `storage.skiff.io/local-path-cleanup` finalizer), provisioning of a
local-path volume on the node the scheduler selected, and expansion (the
volume's capacity follows a larger request when its class allows; the agent
resizes the quota). Events say why a claim waits, deduplicated per claim.

Reads only the informers' stores, except one live read of a claim before
declaring its volume Released (a claim created a moment ago may not be in
the cache yet).
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from controlplane.api import volumes as v
from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.client.store import object_key
from controlplane.controllers import podutil, pv_plan
from controlplane.controllers.base import Controller, ControllerContext

log = logging.getLogger(__name__)

CLAIM = "claim:"
VOLUME = "volume:"


class PersistentVolumeController(Controller):
    name = "persistentvolume-binder"
    default_workers = 2

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.claims = self.watch("PersistentVolumeClaim")
        self.volumes = self.watch("PersistentVolume")
        self.classes = self.watch("StorageClass")
        self.nodes = self.watch("Node")
        self._said: dict[str, tuple[str, str]] = {}  # claim key -> last (reason, message)
        self.follow(self.claims, self._claim_changed, self._claim_deleted)
        self.follow(self.volumes, self._volume_changed, self._volume_changed)
        self.classes.add_event_handler(on_add=lambda sc: self._all_pending())
        self.nodes.add_event_handler(on_update=self._node_updated)

    # ---- handlers -------------------------------------------------------------

    def _claim_changed(self, claim: Object) -> None:
        self.enqueue_key(CLAIM + object_key(claim))
        name = v.spec(claim).get("volumeName")
        if name:
            self.enqueue_key(VOLUME + str(name))

    def _claim_deleted(self, claim: Object) -> None:
        key = object_key(claim)
        self._said.pop(key, None)
        for pv in self.volumes.store.list():
            ref = v.spec(pv).get("claimRef") or {}
            if ref.get("uid") == podutil.uid_of(claim):
                self.enqueue_key(VOLUME + podutil.name_of(pv))

    def _volume_changed(self, pv: Object) -> None:
        self.enqueue_key(VOLUME + podutil.name_of(pv))
        ref = v.spec(pv).get("claimRef") or {}
        if ref.get("name"):
            self.enqueue_key(f"{CLAIM}{ref.get('namespace') or 'default'}/{ref['name']}")
        elif not podutil.is_deleting(pv):
            self._all_pending()  # a new free volume may serve a waiting claim

    def _node_updated(self, old: Object, new: Object) -> None:
        key = v.LOCAL_PATH_ROOT_ANNOTATION
        if podutil.annotations_of(old).get(key) != podutil.annotations_of(new).get(key):
            self._all_pending()

    def _all_pending(self) -> None:
        for claim in self.claims.store.list():
            if not v.spec(claim).get("volumeName"):
                self.enqueue_key(CLAIM + object_key(claim))

    # ---- sync -------------------------------------------------------------------

    def sync(self, key: str) -> float | None:
        if key.startswith(CLAIM):
            self._sync_claim(key[len(CLAIM) :])
        elif key.startswith(VOLUME):
            self._sync_volume(key[len(VOLUME) :])
        return None

    def _node_roots(self) -> dict[str, str]:
        out = {}
        for node in self.nodes.store.list():
            root = podutil.annotations_of(node).get(v.LOCAL_PATH_ROOT_ANNOTATION)
            if root:
                out[podutil.name_of(node)] = root
        return out

    def _class_map(self) -> dict[str, Object]:
        return {podutil.name_of(sc): sc for sc in self.classes.store.list()}

    def _sync_claim(self, key: str) -> None:
        claim = self.claims.store.get_by_key(key)
        if claim is None:
            return
        classes = self._class_map()
        plan = pv_plan.plan_claim(claim, self.volumes.store.list(), classes, self._node_roots())
        if plan.bind_volume is not None:
            self._bind(claim, plan.bind_volume)
        elif plan.provision_on:
            self._provision(claim, classes[v.claim_class(claim)], plan.provision_on)
        elif plan.expand_to:
            self._expand(claim, plan.expand_to)
        if plan.phase and (claim.get("status") or {}).get("phase") != plan.phase:
            self._claim_status(claim, {**(claim.get("status") or {}), "phase": plan.phase})
        if plan.capacity is not None:
            self._claim_status(
                claim, {**(claim.get("status") or {}), "capacity": dict(plan.capacity)}
            )
        if plan.event is not None:
            self._say(claim, *plan.event)

    def _say(self, claim: Object, type_: str, reason: str, message: str) -> None:
        key = object_key(claim)
        if self._said.get(key) == (reason, message):
            return
        self._said[key] = (reason, message)
        self.recorder.event(claim, type_, reason, message)

    def _claim_status(self, claim: Object, status: dict[str, Any]) -> None:
        obj = copy.deepcopy(claim)
        obj["status"] = status
        try:
            self.client.update_status("PersistentVolumeClaim", obj)
        except errors.NotFound:
            pass

    def _bind(self, claim: Object, volume: Object) -> None:
        """Volume's claimRef, volume Bound, claim's volumeName, claim Bound (k8s' order)."""
        if not v.claim_ref_matches(volume, claim) or not (v.spec(volume).get("claimRef") or {}).get(
            "uid"
        ):
            volume = self.client.update("PersistentVolume", pv_plan.bound_volume(volume, claim))
        if (volume.get("status") or {}).get("phase") != "Bound":
            vol = copy.deepcopy(volume)
            vol["status"] = {"phase": "Bound"}
            volume = self.client.update_status("PersistentVolume", vol)
        if v.spec(claim).get("volumeName") != podutil.name_of(volume) or not v.annotations_of(
            claim
        ).get(v.BIND_COMPLETED_ANNOTATION):
            claim = self.client.update("PersistentVolumeClaim", pv_plan.bound_claim(claim, volume))
        status = pv_plan.claim_status(volume)
        if {k: (claim.get("status") or {}).get(k) for k in status} != status:
            self._claim_status(claim, {**(claim.get("status") or {}), **status})
        self._said.pop(object_key(claim), None)
        log.info("claim=%s volume=%s bound", object_key(claim), podutil.name_of(volume))

    def _provision(self, claim: Object, sc: Object, node: str) -> None:
        root = self._node_roots()[node]
        pv = pv_plan.provisioned_volume(claim, sc, node, root)
        try:
            self.client.create("PersistentVolume", pv)
        except errors.AlreadyExists:
            return
        self._say(
            claim,
            "Normal",
            "ProvisioningSucceeded",
            f"Successfully provisioned volume {pv['metadata']['name']} on node {node} "
            f"using {v.LOCAL_PATH_PROVISIONER}",
        )

    def _expand(self, claim: Object, size: str) -> None:
        volume = self.volumes.store.get(str(v.spec(claim).get("volumeName")))
        if volume is None:
            return
        pv = copy.deepcopy(volume)
        pv["spec"]["capacity"] = {**(pv["spec"].get("capacity") or {}), "storage": size}
        self.client.update("PersistentVolume", pv)
        self._say(claim, "Normal", "Resizing", f"volume {podutil.name_of(pv)} resized to {size}")

    def _sync_volume(self, name: str) -> None:
        volume = self.volumes.store.get(name)
        if volume is None:
            return
        ref = v.spec(volume).get("claimRef") or {}
        claim = None
        if ref.get("name"):
            ns = str(ref.get("namespace") or "default")
            claim = self.claims.store.get(str(ref["name"]), ns)
            if claim is None and ref.get("uid"):
                try:  # the cache may lag a claim made a moment ago
                    claim = self.client.get("PersistentVolumeClaim", str(ref["name"]), ns)
                except errors.NotFound:
                    claim = None
        node = pv_plan.missing_node_label(volume)
        if node is not None:
            labels = {v.LOCAL_PATH_NODE_LABEL: node}
            try:
                volume = self.client.patch(
                    "PersistentVolume", name, {"metadata": {"labels": labels}}
                )
            except errors.NotFound:
                return
        plan = pv_plan.plan_volume(volume, claim)
        if plan.delete:
            try:
                self.client.delete("PersistentVolume", name)
                log.info("volume=%s reclaim Delete", name)
            except errors.NotFound:
                pass
            return
        if plan.phase:
            vol = copy.deepcopy(volume)
            vol["status"] = {
                "phase": plan.phase,
                **({"message": plan.message} if plan.message else {}),
            }
            try:
                self.client.update_status("PersistentVolume", vol)
            except errors.NotFound:
                return
        if plan.event is not None:
            self.recorder.event(volume, *plan.event)


def init(ctx: ControllerContext) -> Controller:
    return PersistentVolumeController(ctx)
