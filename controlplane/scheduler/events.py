"""Informer events in: they update the cache, the pod groups and the queue, nothing else.

`EventHandlers` is kube-scheduler's eventhandlers.go: a bound pod goes to the
cache (our own bind coming back confirms its assumption without re-parsing
it), a pending pod this scheduler is responsible for goes to the queue, a
deleted pod leaves both and releases a Permit wait, claims, volumes and
classes go to the volume state, and node, PodGroup or storage changes move
unschedulable pods that may now fit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controlplane.scheduler.cache import Cache, finished
from controlplane.scheduler.groups import PodGroups
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.queue import SchedulingQueue
from controlplane.scheduler.types import (
    NODE_ADD,
    NODE_DELETE,
    NODE_UPDATE,
    POD_ADD,
    POD_DELETE,
    POD_GROUP_CHANGE,
    Action,
    ClusterEvent,
    Resource,
)
from controlplane.scheduler.volume_state import KINDS as STORAGE_KINDS
from controlplane.scheduler.volume_state import VolumeState
from controlplane.scheduler.waiting import WaitingPods

Obj = dict[str, Any]
_ACTIONS = {"ADDED": Action.ADD, "DELETED": Action.DELETE}


def _relevant(old: Obj, new: Obj) -> bool:
    """Whether a pending pod's change can change where it fits (not status, not our writes)."""
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    return (
        old.get("spec") != new.get("spec")
        or om.get("labels") != nm.get("labels")
        or om.get("annotations") != nm.get("annotations")
        or bool(nm.get("deletionTimestamp"))
    )


def changed_for_cache(old: Obj, new: Obj) -> bool:
    """Whether a bound pod's change can matter to the cache (not a status write)."""
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    return (
        old.get("spec") != new.get("spec")
        or om.get("labels") != nm.get("labels")
        or om.get("annotations") != nm.get("annotations")
        or om.get("ownerReferences") != nm.get("ownerReferences")
        or om.get("deletionTimestamp") != nm.get("deletionTimestamp")
        or om.get("uid") != nm.get("uid")
    )


@dataclass(eq=False)
class EventHandlers:
    cache: Cache
    queue: SchedulingQueue
    groups: PodGroups
    volumes: VolumeState
    waiting: WaitingPods
    pod_info: Callable[[Obj], PodInfo]
    responsible: Callable[[PodInfo], bool]
    pending_pods: dict[str, PodInfo] = field(default_factory=dict, init=False)
    # pod key -> last explanation written
    reported: dict[str, str] = field(default_factory=dict, init=False)
    # PodDisruptionBudgets by ns/name, for preemption's choice of victims.
    disruption_budgets: dict[str, Obj] = field(default_factory=dict, init=False)

    def on_pod_add(self, pod: Obj) -> None:
        with self.cache.lock:
            p = self.pod_info(pod)
            if p.pod_group:
                self.groups.join(p.pod_group, p.key)
            if p.node_name:
                self.pending_pods.pop(p.key, None)
                self.reported.pop(p.key, None)
                self.queue.delete(p.key)
                self.cache.add_pod(p)
                self.queue.move_on_event(POD_ADD)
            elif self.responsible(p) and not (pod.get("metadata") or {}).get("deletionTimestamp"):
                self.pending_pods[p.key] = p
                if self.cache.node_of(p.key) is None:
                    self.queue.add(p)

    def on_pod_update(self, pod: Obj, old: Obj | None = None) -> None:
        """A changed pod. Status-only changes of a pending pod do not requeue it."""
        with self.cache.lock:
            meta = pod.get("metadata") or {}
            key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
            bound = bool((pod.get("spec") or {}).get("nodeName"))
            if bound and self.cache.node_of(key) is not None and not self.cache.is_assumed(key):
                # A status write (Running, Ready, ...) changes nothing the cache
                # counts: keep the newer object without re-parsing it.
                if (
                    old is not None
                    and not changed_for_cache(old, pod)
                    and self.cache.refresh_pod(key, pod)
                ):
                    return
                self.cache.update_pod(self.pod_info(pod))  # e.g. now terminating
                if finished(pod):
                    self.queue.move_on_event(POD_DELETE)  # its room is free
                return
            if bound and self.cache.is_assumed(key):
                confirmed = self._confirmed(key, pod)
                if confirmed is not None:
                    # Our own bind coming back: reuse the parsed pod.
                    self.pending_pods.pop(key, None)
                    self.cache.confirm_pod(confirmed)
                    self.queue.move_on_event(POD_ADD)
                    return
            if (
                not bound
                and old is not None
                and key in self.pending_pods
                and not _relevant(old, pod)
            ):
                return
            self.on_pod_add(pod)

    def _confirmed(self, key: str, pod: Obj) -> PodInfo | None:
        """The assumed PodInfo, now bound, if `pod` differs from it only by the bind."""
        assumed = self.cache.assumed_info(key)
        if assumed is None:
            return None
        node = pod["spec"]["nodeName"]
        before = assumed.pod.get("spec") or {}
        after = pod.get("spec") or {}
        if before.keys() | {"nodeName"} != after.keys() | {"nodeName"}:
            return None
        if any(before[k] != after[k] for k in before if k != "nodeName"):
            return None
        if (assumed.pod.get("metadata") or {}).get("labels") != (pod.get("metadata") or {}).get(
            "labels"
        ):
            return None
        return assumed.with_changes(pod=pod, node_name=node)

    def on_pod_delete(self, pod: Obj) -> None:
        with self.cache.lock:
            p = self.pod_info(pod)
            self.pending_pods.pop(p.key, None)
            self.reported.pop(p.key, None)
            if p.pod_group:
                self.groups.leave(p.pod_group, p.key)
            self.queue.delete(p.key)
            self.waiting.reject(p.key, "pod deleted", requeue=False)
            self.cache.remove_pod(p.key)
            self.queue.move_on_event(POD_DELETE)

    def on_node_add(self, node: Obj) -> None:
        with self.cache.lock:
            self.cache.add_node(node)
            self.queue.move_on_event(NODE_ADD)

    def on_node_update(self, node: Obj) -> None:
        with self.cache.lock:
            self.cache.update_node(node)
            self.queue.move_on_event(NODE_UPDATE)

    def on_node_delete(self, node: Obj) -> None:
        with self.cache.lock:
            self.cache.remove_node(node["metadata"]["name"])
            self.queue.move_on_event(NODE_DELETE)

    def on_pod_group(self, group: Obj, deleted: bool = False) -> None:
        self.groups.put(group, deleted)
        self.queue.move_on_event(POD_GROUP_CHANGE)

    def on_disruption_budget(self, pdb: Obj, deleted: bool = False) -> None:
        meta = pdb.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
        with self.cache.lock:  # preemption reads them under it
            if deleted:
                self.disruption_budgets.pop(key, None)
            else:
                self.disruption_budgets[key] = pdb

    def on_storage(self, kind: str, type_: str, obj: Obj) -> None:
        """A claim, volume or class changed (ADDED/MODIFIED/DELETED): pods waiting on
        volumes may fit now."""
        self.volumes.on_event(kind, type_, obj)
        action = _ACTIONS.get(type_, Action.UPDATE)
        self.queue.move_on_event(ClusterEvent(Resource(kind), action))

    def handle(self, kind: str, type_: str, obj: Obj) -> None:
        """Dispatch one watch event (kind, ADDED/MODIFIED/DELETED, object)."""
        if kind == "Pod":
            {
                "ADDED": self.on_pod_add,
                "MODIFIED": self.on_pod_update,
                "DELETED": self.on_pod_delete,
            }[type_](obj)
        elif kind == "Node":
            {
                "ADDED": self.on_node_add,
                "MODIFIED": self.on_node_update,
                "DELETED": self.on_node_delete,
            }[type_](obj)
        elif kind == "PodGroup":
            self.on_pod_group(obj, deleted=type_ == "DELETED")
        elif kind == "PodDisruptionBudget":
            self.on_disruption_budget(obj, deleted=type_ == "DELETED")
        elif kind in STORAGE_KINDS:
            self.on_storage(kind, type_, obj)
