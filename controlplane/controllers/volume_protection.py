"""The pvc-protection and pv-protection controllers: finalizers that keep storage in use.

A claim being deleted keeps `kubernetes.io/pvc-protection` while any pod
that is not finished names it in its volumes, so deleting a claim in use
leaves it Terminating and never yanks the volume from a running pod; the
finalizer goes once the last such pod is gone (checked against the cache,
then confirmed with a live list of the namespace's pods, as Kubernetes
does). A volume being deleted keeps `kubernetes.io/pv-protection` while it
is Bound to a claim.
"""

from __future__ import annotations

import logging

from controlplane.api import volumes as v
from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.controllers import podutil, pv_plan
from controlplane.controllers.base import Controller, ControllerContext

log = logging.getLogger(__name__)

CLAIMS_INDEX = "pvc-users"


def claims_index(pod: Object) -> list[str]:
    ns = podutil.namespace_of(pod) or "default"
    return [f"{ns}/{name}" for name in v.pod_claim_names(pod)]


class PvcProtectionController(Controller):
    name = "pvc-protection"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.claims = self.watch("PersistentVolumeClaim")
        self.pods = self.watch("Pod", {CLAIMS_INDEX: claims_index})
        self.follow(self.claims, self._claim)
        self.pods.add_event_handler(
            on_update=lambda old, new: self._pod(new),
            on_delete=self._pod,
        )

    def _claim(self, claim: Object) -> None:
        if podutil.is_deleting(claim) and v.PVC_PROTECTION in (
            podutil.meta(claim).get("finalizers") or []
        ):
            self.enqueue(claim)

    def _pod(self, pod: Object) -> None:
        for key in claims_index(pod):
            self.enqueue_key(key)

    def sync(self, key: str) -> float | None:
        claim = self.claims.store.get_by_key(key)
        if claim is None or not podutil.is_deleting(claim):
            return None
        if v.PVC_PROTECTION not in (podutil.meta(claim).get("finalizers") or []):
            return None
        if pv_plan.claim_in_use(key, self.pods.store.by_index(CLAIMS_INDEX, key)):
            return None
        ns = podutil.namespace_of(claim) or "default"
        live = self.client.list("Pod", ns).items
        users = pv_plan.claim_in_use(key, live)
        if users:
            log.info("claim=%s still used by %s", key, ", ".join(users))
            return None
        try:
            self.client.update(
                "PersistentVolumeClaim", podutil.without_finalizer(claim, v.PVC_PROTECTION)
            )
        except errors.NotFound:
            pass
        return None


class PvProtectionController(Controller):
    name = "pv-protection"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.volumes = self.watch("PersistentVolume")
        self.follow(self.volumes, self.enqueue)

    def sync(self, key: str) -> float | None:
        pv = self.volumes.store.get_by_key(key)
        if pv is None or not podutil.is_deleting(pv):
            return None
        if v.PV_PROTECTION not in (podutil.meta(pv).get("finalizers") or []):
            return None
        if (pv.get("status") or {}).get("phase") == "Bound":
            return None
        try:
            self.client.update("PersistentVolume", podutil.without_finalizer(pv, v.PV_PROTECTION))
        except errors.NotFound:
            pass
        return None


def init_pvc(ctx: ControllerContext) -> Controller:
    return PvcProtectionController(ctx)


def init_pv(ctx: ControllerContext) -> Controller:
    return PvProtectionController(ctx)
