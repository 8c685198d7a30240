"""The ResourceQuota controller: status.hard and status.used kept true.

Each sync recomputes a quota's usage from scratch from the objects of its
namespace (controlplane/api/quota.py, the evaluators the admission
charges by), so a restart, a charge whose object was then refused, or a
deletion brings status.used back to what is there: no drift. status.hard
is spec.hard; used names every resource of hard. A quota is synced when
it is created or changed, when a pod, service, claim, config map or secret
of its namespace is deleted or changes what it uses (a pod finishing:
Kubernetes' replenishment), and every `RESYNC` seconds (other kinds'
deletions). The status write names the quota's resourceVersion as read,
so it never undoes a charge the admission made meanwhile: a conflict
syncs again. As Kubernetes' controller, a change of status alone (a
charge) starts no sync.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.api import quota
from controlplane.api.kinds import KindInfo, all_kinds, by_kind
from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.client.store import object_key
from controlplane.controllers import podutil
from controlplane.controllers.base import Controller, ControllerContext

# Kinds whose changes replenish quotas at once (watched); others at RESYNC.
WATCHED = ("Pod", "Service", "PersistentVolumeClaim", "ConfigMap", "Secret")
RESYNC = 30.0


def kinds_for(hard: Mapping[str, Any]) -> list[KindInfo]:
    """The kinds whose objects count toward any resource of `hard`."""
    found = []
    for info in all_kinds():
        if info.namespaced and any(quota.matches(info, r) for r in hard):
            found.append(info)
    return found


class ResourceQuotaController(Controller):
    name = "resourcequota"
    default_workers = 5  # concurrent-resource-quota-syncs

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.quotas = self.watch("ResourceQuota")
        # Only a new quota or a changed spec: the admission's charges change
        # status.used alone, and a recount then could miss the very object
        # being charged for (stored just after its charge).
        self.quotas.add_event_handler(
            on_add=self.enqueue,
            on_update=lambda old, new: (
                self.enqueue(new) if podutil.spec(old) != podutil.spec(new) else None
            ),
            on_delete=None,
        )
        self.watched = {kind: self.watch(kind) for kind in WATCHED}
        for informer in self.watched.values():
            informer.add_event_handler(
                on_add=None, on_update=self._changed, on_delete=self._replenish
            )

    def _replenish(self, obj: Object) -> None:
        for q in self.quotas.store.list(podutil.namespace_of(obj)):
            self.enqueue(q)

    def _changed(self, old: Object, new: Object) -> None:
        info = by_kind(str(new.get("kind") or "")) if new.get("kind") else None
        if info is None:
            return
        if quota.usage(info, old).values != quota.usage(info, new).values:
            self._replenish(new)

    def _objects(self, info: KindInfo, namespace: str) -> list[Object]:
        informer = self.watched.get(info.key)
        if informer is not None:
            return list(informer.store.list(namespace))
        return list(self.client.list(info.key, namespace).items)

    def usage(self, q: Object) -> dict[str, str]:
        """status.used of quota `q`, from the objects of its namespace."""
        hard = dict(podutil.spec(q).get("hard") or {})
        namespace = podutil.namespace_of(q)
        used = quota.Usage()
        for info in kinds_for(hard):
            for obj in self._objects(info, namespace):
                if podutil.is_deleting(obj) and info.key == "Pod":
                    continue  # a terminating pod is released, as Kubernetes' evaluator
                if quota.applies(q, info, obj):
                    used.merge(quota.usage(info, obj))
        for name in hard:
            used.values.setdefault(name, 0)
        return used.formatted(hard)

    def sync(self, key: str) -> float | None:
        q = self.quotas.store.get_by_key(key)
        if q is None:
            return None
        hard = dict(podutil.spec(q).get("hard") or {})
        status = {"hard": hard, "used": self.usage(q)}
        current = podutil.status(q)
        if current.get("hard") != hard or current.get("used") != status["used"]:
            try:
                self.write_status("ResourceQuota", q, status, at_read_version=True)
            except errors.Conflict:
                self.enqueue_key(object_key(q))  # charged meanwhile: count again
        return RESYNC


def init(ctx: ControllerContext) -> Controller:
    return ResourceQuotaController(ctx)
