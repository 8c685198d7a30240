"""The batch scheduler's cache: what the informers tell it, kept for its sessions.

`BatchCache` holds the default scheduler's `Cache` (`cluster`: the nodes and
the pods placed on them, bound or assumed, as arrays), the PodGroups and
their member pods, the Queues, the pending pods whose `schedulerName` is
`volcano`, the pods that ran to their end (out of the cluster: their room
is free, as kube-scheduler's informer drops them; kept for their groups'
counts), the PriorityClasses, the storage kinds for the volume plugins, and
the per-group `Snapshots` the sessions start from (Volcano's
SchedulerCache).

Each informer event updates it under `lock` and says what became stale:
the group's snapshot here, and through `GroupListener` (the status writer)
the group's status. `dirty` is set when a session could act on the change;
events that change nothing a session could act on (a running pod's status
write, our own bind coming back, our own status write echoed) leave it.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

from controlplane.api import volcano
from controlplane.scheduler.batch.info import req, task_name
from controlplane.scheduler.batch.snapshot import Snapshots
from controlplane.scheduler.batch.status import COUNTS
from controlplane.scheduler.cache import Cache, finished
from controlplane.scheduler.events import changed_for_cache
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.volume_state import KINDS as STORAGE_KINDS
from controlplane.scheduler.volume_state import VolumeState
from machinery.clock import Clock

log = logging.getLogger("skiff.scheduler.batch")
Obj = dict[str, Any]


class GroupListener(Protocol):
    """Who must hear that a group's status is to be computed again (status.py)."""

    def stale(self, group: str) -> None: ...

    def all_stale(self) -> None: ...

    def forget(self, group: str) -> None: ...

    def counts_moved(self, group: str) -> None: ...


def _bound_as_assumed(before: Obj, after: Obj) -> bool:
    """Whether `after` is `before` bound to a node, with nothing else the cache counts changed."""
    spec = dict(after.get("spec") or {})
    spec.pop("nodeName", None)
    return not changed_for_cache(before, {**after, "spec": spec})


def _state(queue: Obj) -> Any:
    return (queue.get("status") or {}).get("state")


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


class BatchCache:
    def __init__(self, clock: Clock, listener: GroupListener) -> None:
        self.cluster = Cache(clock)
        self.volumes = VolumeState()
        self.lock = self.cluster.lock
        self.listener = listener
        self.groups: dict[str, Obj] = {}
        self.members: dict[str, set[str]] = {}
        self.queues: dict[str, Obj] = {}
        self.pending: dict[str, PodInfo] = {}
        self.finished: dict[str, Obj] = {}
        self.priority_classes: dict[str, int] = {}
        self.snapshots = Snapshots(
            self.cluster, self.groups, self.members, self.queues, self.pending,
            self.priority_classes, self.finished,
        )  # fmt: skip
        self.dirty = threading.Event()  # something changed that a session could act on

    # ---- informer handlers ---------------------------------------------------------

    def on_pod(self, pod: Obj, deleted: bool = False) -> None:
        """Track a pod; a session follows unless the event changes nothing a
        session could act on (a running pod's status write, a bind confirmed)."""
        meta = pod.get("metadata") or {}
        node = (pod.get("spec") or {}).get("nodeName")
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        cluster = self.cluster
        with self.lock:
            if deleted:
                self.finished.pop(key, None)
            elif node and finished(pod):
                self._finish(key, pod)
                return
            placed = cluster.nodes.get(node) if node and not deleted else None
            old = placed.pods.get(key) if placed is not None else None
            if (
                old is not None
                and not cluster.is_assumed(key)
                and not changed_for_cache(old.pod, pod)
                and cluster.refresh_pod(key, pod)
            ):
                # A status write of a placed pod: nothing it counts changed (the
                # snapshot's job keeps the pod as it was parsed: the same facts),
                # but its phase counts in its group's status (by the counts' period).
                if old.pod_group:
                    self.listener.counts_moved(old.pod_group)
                return
            if old is not None and cluster.is_assumed(key) and _bound_as_assumed(old.pod, pod):
                # Our own bind coming back: the pod as parsed, on the node we chose.
                nominated = (pod.get("status") or {}).get("nominatedNodeName") or ""
                cluster.confirm_pod(
                    old.with_changes(pod=pod, node_name=str(node), nominated_node=nominated)
                )
                self.changed(old.pod_group)
                return
            p = PodInfo.of(pod, self.priority_classes)
            # What the snapshot reads of each member, computed with the parse
            # (once per pod event) rather than in the session that first needs
            # it: one over 10,000 new pods paid ~50 ms more for it.
            req(p)
            task_name(p)
            if old is not None and old.pod_group != p.pod_group:
                self.changed(old.pod_group)
            self.changed(p.pod_group)
            if p.pod_group:
                if deleted:
                    self.members.get(p.pod_group, set()).discard(p.key)
                else:
                    self.members.setdefault(p.pod_group, set()).add(p.key)
            if deleted:
                self.pending.pop(p.key, None)
                cluster.remove_pod(p.key)
            elif p.node_name:
                self.pending.pop(p.key, None)
                assumed = cluster.assumed_info(p.key)
                if assumed is not None and cluster.node_of(p.key) == p.node_name:
                    cluster.confirm_pod(p)  # our own bind, counted already
                    return
                if assumed is not None or cluster.node_of(p.key) != p.node_name:
                    cluster.add_pod(p)
                else:
                    cluster.update_pod(p)
            elif p.scheduler_name == volcano.SCHEDULER_NAME and not meta.get("deletionTimestamp"):
                if not cluster.is_assumed(p.key):
                    self.pending[p.key] = p
            else:
                self.pending.pop(p.key, None)
        self.dirty.set()

    def _finish(self, key: str, pod: Obj) -> None:
        """A bound pod ran to its end: its room is free, its group counts it."""
        p = self.pending.pop(key, None)
        old = self.placed_pod(key)
        self.cluster.remove_pod(key)
        self.finished[key] = pod
        group = (old or p or PodInfo.of(pod, self.priority_classes)).pod_group
        if group:
            self.members.setdefault(group, set()).add(key)
        self.changed(group)
        self.dirty.set()

    def changed(self, group: str) -> None:
        """Something about this group's pods changed: its snapshot and status are stale."""
        if group:
            self.snapshots.invalidate(group)
            self.listener.stale(group)

    def on_node(self, node: Obj, deleted: bool = False) -> None:
        with self.lock:
            name = node["metadata"]["name"]
            if deleted or name not in self.cluster.nodes:
                # Pods placed on it are lost, or orphans find their node.
                self.snapshots.invalidate_all()
                self.listener.all_stale()
            if deleted:
                self.cluster.remove_node(name)
            else:
                self.cluster.add_node(node)
        self.dirty.set()

    def on_pod_group(self, group: Obj, deleted: bool = False) -> None:
        with self.lock:
            key = _key(group)
            self.listener.stale(key)
            old = self.groups.get(key)
            self.snapshots.group_changed(key)
            if old is not None and not deleted and old.get("spec") == group.get("spec"):
                self.groups[key] = group  # a status write (ours, mostly): no session for it
                return
            if deleted:
                self.groups.pop(key, None)
                self.snapshots.forget(key)
                self.listener.forget(key)
            else:
                self.groups[key] = group
        self.dirty.set()

    def on_queue(self, queue: Obj, deleted: bool = False) -> None:
        with self.lock:
            name = queue["metadata"]["name"]
            old = self.queues.get(name)
            if deleted:
                self.queues.pop(name, None)
            else:
                self.queues[name] = queue
                if old is not None and (old.get("spec"), _state(old)) == (
                    queue.get("spec"),
                    _state(queue),
                ):
                    return  # only its counts moved (our own status write)
        self.dirty.set()

    def on_priority_class(self, pc: Obj, deleted: bool = False) -> None:
        name = pc["metadata"]["name"]
        with self.lock:
            if deleted:
                self.priority_classes.pop(name, None)
            else:
                self.priority_classes[name] = int(pc.get("value", 0))
            self.snapshots.invalidate_all()

    def on_storage(self, kind: str, type_: str, obj: Obj) -> None:
        """A claim, volume or class (for the volume plugins; wakes PreBind's waits)."""
        self.volumes.on_event(kind, type_, obj)
        self.dirty.set()

    def handle_event(self, kind: str, type_: str, obj: Obj) -> None:
        deleted = type_ == "DELETED"
        if kind in STORAGE_KINDS:
            self.on_storage(kind, type_, obj)
            return
        {
            "Pod": self.on_pod,
            "Node": self.on_node,
            "PodGroup": self.on_pod_group,
            "Queue": self.on_queue,
            "PriorityClass": self.on_priority_class,
        }[kind](obj, deleted)

    # ---- what the other parts ask (under `lock`) --------------------------------------

    def placed_pod(self, key: str, uid: str | None = None) -> PodInfo | None:
        """The pod placed under `key` (when it is still the one with `uid`, if given)."""
        node = self.cluster.node_of(key)
        info = self.cluster.nodes.get(node) if node is not None else None
        p = info.pods.get(key) if info is not None else None
        return p if p is not None and (uid is None or p.uid == uid) else None

    def expire_assumed(self) -> None:
        """Binds that finished but never showed up in the informer within the
        cache's TTL (kube-scheduler's 15 minutes): their room is freed and
        the pods are pending again, as the default scheduler does; a pod that
        was bound after all refuses the next bind and its event comes."""
        for p in self.cluster.expire_assumed():
            log.warning("bind of %s never confirmed by the informer: pending again", p.key)
            self.changed(p.pod_group)
            self.requeue(p)

    def bound(self, keys: list[str]) -> None:
        """These pods were placed by the session: pending no more."""
        for key in keys:
            self.pending.pop(key, None)

    def requeue(self, p: PodInfo) -> None:
        """A pod whose bind failed (or never came back) is pending again,
        unless its DELETED event came meanwhile (it is no member of its group
        any more) or a pod of another UID took its name."""
        if p.pod_group and p.key not in self.members.get(p.pod_group, ()):
            return
        now = self.pending.get(p.key)
        if now is None or now.uid == p.uid:
            self.pending[p.key] = p

    def phase_counts(self, group: str) -> dict[str, int]:
        """The group's member pods by phase: running, succeeded, failed."""
        counts = dict.fromkeys(COUNTS, 0)
        for pk in self.members.get(group, ()):
            p = self.placed_pod(pk)
            obj = p.pod if p is not None else self.finished.get(pk)
            phase = ((obj.get("status") or {}).get("phase") if obj is not None else None) or ""
            if phase.lower() in counts:
                counts[phase.lower()] += 1
        return counts
