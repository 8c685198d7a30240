"""The garbage collector: cascading deletion along ownerReferences.

It watches every kind the API serves that can be deleted, as Kubernetes'
collector monitors every deletable resource (Events aside): the kinds that
commonly own or are owned (workloads, pods, services, endpoints, config
maps, secrets, HPAs, jobs, pod groups) from the start, every other built-in
kind (Queues, Nodes, RBAC objects, ...) too, and each custom resource's
kind once its CustomResourceDefinition appears; so a Queue or a custom
object deleted in the foreground or orphaning its dependents has its
finalizer taken off. Each kind is indexed by the uids of its objects'
owners. Keys are `Kind|namespace|name`.

- A dependent whose owners are all gone (absent, or present under a
  different uid: checked live against the API server before acting, so a
  lagging cache never deletes anything) is deleted in the background; one
  that still has a live owner loses only its dangling references.
- Background deletion is that: the owner disappears, its dependents follow.
- Foreground: the owner carries `foregroundDeletion` and a deletionTimestamp;
  its dependents are deleted (in the foreground themselves when they have
  dependents), and once no dependent with blockOwnerDeletion remains the
  finalizer is removed so the owner goes.
- Orphan: the owner carries the `orphan` finalizer; its references are
  removed from every dependent, then the finalizer, so dependents stay.
The collector never deletes an object that has a live owner.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from controlplane.api import crd, kinds
from controlplane.client import errors
from controlplane.client.informer import SharedInformer
from controlplane.client.interface import DeleteOptions, Object
from controlplane.controllers import podutil
from controlplane.controllers.base import (
    OWNER_UID,
    Controller,
    ControllerContext,
    ensure_indexer,
    owner_uid_index,
)

GC_KINDS = (
    "Pod",
    "ReplicaSet",
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "CronJob",
    "Service",
    "Endpoints",
    "ConfigMap",
    "Secret",
    "HorizontalPodAutoscaler",
    "PodGroup",
    "PersistentVolumeClaim",
    "Job.batch.volcano.sh",
)


# Never watched: Events (as Kubernetes' collector ignores them: many, short-lived, owning nothing).
IGNORED = ("Event",)


def other_kinds() -> list[str]:
    """Every other deletable built-in kind, by key."""
    return [
        k.key
        for k in kinds.all_kinds()
        if not k.create_only and not k.read_only and k.key not in GC_KINDS and k.kind not in IGNORED
    ]


def ref_kind(ref: Mapping[str, Any]) -> str:
    """The kind key an ownerReference names (its apiVersion tells batch/v1
    Job from Volcano's Job.batch.volcano.sh)."""
    kind = str(ref.get("kind", ""))
    try:
        return kinds.for_object(str(ref.get("apiVersion", "")), kind).key
    except kinds.UnknownKind:
        return kind


FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"


class GarbageCollector(Controller):
    name = "garbagecollector"
    default_workers = 20

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.by_kind: dict[str, SharedInformer] = {}
        self._absent: set[str] = set()  # owner uids confirmed gone
        self._absent_lock = threading.Lock()
        self._kinds_lock = threading.Lock()
        for kind in (*GC_KINDS, *other_kinds()):
            self._monitor(kind)
        self.crds = self.by_kind["CustomResourceDefinition"]
        self.crds.add_event_handler(
            on_add=self._crd_changed, on_update=lambda _o, new: self._crd_changed(new)
        )

    def _monitor(self, kind: str, start: bool = False) -> None:
        with self._kinds_lock:
            if kind in self.by_kind:
                return
            informer = self.watch(kind)
            ensure_indexer(informer, OWNER_UID, owner_uid_index)
            self.by_kind[kind] = informer
        self._subscribe(informer, kind)
        if start and not informer.started():
            informer.start()

    def _crd_changed(self, obj: Object) -> None:
        """A custom resource's kind: watched from now on (known to this process's
        kinds table too, for its scope, when the API server is another process)."""
        try:
            info = crd.kind_info(obj)
        except (KeyError, TypeError, ValueError):
            return
        try:
            kinds.by_kind(info.key)
        except kinds.UnknownKind:
            kinds.register(info)
        self._monitor(info.key, start=True)

    def _subscribe(self, informer: SharedInformer, kind: str) -> None:
        def add(obj: Object) -> None:
            self._changed(kind, obj)

        def update(old: Object, new: Object) -> None:
            self._updated(kind, old, new)

        def delete(obj: Object) -> None:
            self._deleted(kind, obj)

        informer.add_event_handler(on_add=add, on_update=update, on_delete=delete)

    # ---- handlers -------------------------------------------------------------

    def _key(self, kind: str, obj: Mapping[str, Any]) -> str:
        return f"{kind}|{podutil.namespace_of(obj)}|{podutil.name_of(obj)}"

    def _changed(self, kind: str, obj: Object) -> None:
        meta = podutil.meta(obj)
        refs = meta.get("ownerReferences")
        if refs and (meta.get("deletionTimestamp") or not self._owners_live_cached(obj, refs)):
            self.enqueue_key(self._key(kind, obj))
        if meta.get("deletionTimestamp") and {FOREGROUND, ORPHAN} & set(
            meta.get("finalizers") or []
        ):
            self.enqueue_key(self._key(kind, obj))

    def _owners_live_cached(self, obj: Object, refs: list[Any]) -> bool:
        """Whether every owner is in our caches, same uid, not being deleted in
        the foreground: then a sync would find nothing to do (every new pod of a
        ReplicaSet), and an owner's later deletion enqueues its dependents anyway."""
        ns = podutil.namespace_of(obj)
        for ref in refs:
            if not isinstance(ref, dict):
                return False
            kind = ref_kind(ref)
            owner = self._cached(kind, ns if self._namespaced(kind) else "", str(ref.get("name")))
            if owner is None or podutil.uid_of(owner) != ref.get("uid"):
                return False
            meta = podutil.meta(owner)
            if meta.get("deletionTimestamp") and FOREGROUND in (meta.get("finalizers") or []):
                return False
        return True

    def _updated(self, kind: str, old: Object, new: Object) -> None:
        if podutil.meta(old).get("resourceVersion") == podutil.meta(new).get("resourceVersion"):
            return
        if (
            podutil.meta(old).get("ownerReferences") != podutil.meta(new).get("ownerReferences")
            or podutil.meta(old).get("deletionTimestamp")
            != podutil.meta(new).get("deletionTimestamp")
            or podutil.meta(old).get("finalizers") != podutil.meta(new).get("finalizers")
        ):
            self._changed(kind, new)

    def _deleted(self, kind: str, obj: Object) -> None:
        uid = podutil.uid_of(obj)
        for dependent_kind, informer in list(self.by_kind.items()):
            for dep in informer.store.by_index(OWNER_UID, uid):
                self.enqueue_key(self._key(dependent_kind, dep))
        # An owner waiting in the foreground may be unblocked by this deletion.
        for ref in podutil.meta(obj).get("ownerReferences") or []:
            owner_kind = ref_kind(ref)
            if owner_kind in self.by_kind:
                ns = "" if not self._namespaced(owner_kind) else podutil.namespace_of(obj)
                self.enqueue_key(f"{owner_kind}|{ns}|{ref.get('name')}")

    # ---- helpers ---------------------------------------------------------------

    def _namespaced(self, kind: str) -> bool:
        try:
            return kinds.by_kind(kind).namespaced
        except kinds.UnknownKind:
            return True

    def _cached(self, kind: str, ns: str, name: str) -> Object | None:
        informer = self.by_kind.get(kind)
        if informer is None:
            return None
        return informer.store.get(name, ns or None)

    def _owner_state(self, ref: Mapping[str, Any], ns: str) -> tuple[str, Object | None]:
        """("live" | "absent" | "foreground", the owner)."""
        kind = ref_kind(ref)
        name = str(ref.get("name", ""))
        owner_ns = ns if self._namespaced(kind) else ""
        uid = str(ref.get("uid", ""))
        with self._absent_lock:
            if uid in self._absent:
                return "absent", None
        owner = self._cached(kind, owner_ns, name)
        if owner is None or podutil.uid_of(owner) != uid:
            try:
                owner = self.client.get(kind, name, owner_ns or None)
            except errors.NotFound:
                owner = None
            if owner is None or podutil.uid_of(owner) != uid:
                # A uid never comes back: remember it (bounded) to spare the
                # API server one lookup per dependent in a cascade.
                with self._absent_lock:
                    if len(self._absent) > 100_000:
                        self._absent.clear()
                    self._absent.add(uid)
                return "absent", None
        meta = podutil.meta(owner)
        if meta.get("deletionTimestamp") and FOREGROUND in (meta.get("finalizers") or []):
            return "foreground", owner
        return "live", owner

    def _dependents(self, owner: Object) -> list[tuple[str, Object]]:
        uid = podutil.uid_of(owner)
        out = []
        for kind, informer in list(self.by_kind.items()):
            for dep in informer.store.by_index(OWNER_UID, uid):
                out.append((kind, dep))
        return out

    # ---- sync -------------------------------------------------------------------

    def sync(self, key: str) -> float | None:
        kind, ns, name = key.split("|", 2)
        obj = self._cached(kind, ns, name)
        if obj is None:
            try:
                obj = self.client.get(kind, name, ns or None)
            except errors.NotFound:
                return None
        meta = podutil.meta(obj)
        finalizers = list(meta.get("finalizers") or [])
        if meta.get("deletionTimestamp") and ORPHAN in finalizers:
            self._orphan_dependents(kind, obj)
            return None
        if meta.get("deletionTimestamp") and FOREGROUND in finalizers:
            if self._process_foreground(kind, obj):
                return None
            return 5.0
        refs = list(meta.get("ownerReferences") or [])
        if not refs or meta.get("deletionTimestamp"):
            return None
        states = [(ref, *self._owner_state(ref, ns)) for ref in refs]
        if all(s[1] == "live" for s in states):
            return None
        if all(s[1] == "absent" for s in states):
            # The common cascade: delete, guarded by the resourceVersion we
            # judged, so a dependent whose references changed meanwhile (an
            # orphaning, a cache behind the server) is never deleted on stale data.
            try:
                self._delete(kind, obj, "Background", guard=True)
                return None
            except errors.Conflict:
                pass
        # Otherwise judge by the object as the API server has it now.
        try:
            fresh = self.client.get(kind, name, ns or None)
        except errors.NotFound:
            return None
        if podutil.uid_of(fresh) != podutil.uid_of(obj) or podutil.is_deleting(fresh):
            return None
        obj = fresh
        refs = list(podutil.meta(fresh).get("ownerReferences") or [])
        if not refs:
            return None
        states = [(ref, *self._owner_state(ref, ns)) for ref in refs]
        live = [s for s in states if s[1] == "live"]
        absent = [s for s in states if s[1] == "absent"]
        waiting = [s for s in states if s[1] == "foreground"]
        if live:
            if absent:
                keep = [r for r, st, _ in states if st != "absent"]
                self._patch_refs(kind, obj, keep)
            return None
        if waiting:
            # Owners are deleted in the foreground: delete this dependent, in
            # the foreground too when it has dependents of its own.
            policy = "Foreground" if self._dependents(obj) else "Background"
            self._delete(kind, obj, policy)
            return None
        if absent:
            self._delete(kind, obj, "Background", guard=True)
        return None

    def _delete(self, kind: str, obj: Object, policy: str, guard: bool = False) -> None:
        """Delete `obj` (its uid must match); with `guard`, only at the
        resourceVersion we judged it at (Conflict is raised otherwise)."""
        rv = podutil.meta(obj).get("resourceVersion") if guard else None
        try:
            self.client.delete(
                kind,
                podutil.name_of(obj),
                podutil.namespace_of(obj) or None,
                DeleteOptions(
                    propagation_policy=policy,
                    precondition_uid=podutil.uid_of(obj) or None,
                    precondition_resource_version=str(rv) if rv else None,
                ),
            )
        except errors.NotFound:
            pass
        except errors.Conflict:
            if guard:
                raise

    def _patch_refs(self, kind: str, obj: Object, refs: list[Any]) -> None:
        try:
            self.client.patch(
                kind,
                podutil.name_of(obj),
                {"metadata": {"ownerReferences": refs or None}},
                podutil.namespace_of(obj) or None,
            )
        except errors.NotFound:
            pass

    def _remove_finalizer(self, kind: str, obj: Object, finalizer: str) -> None:
        try:
            fresh = self.client.get(kind, podutil.name_of(obj), podutil.namespace_of(obj) or None)
        except errors.NotFound:
            return
        if podutil.uid_of(fresh) != podutil.uid_of(obj):
            return
        try:
            self.client.update(kind, podutil.without_finalizer(fresh, finalizer))
        except errors.NotFound:
            pass

    def _orphan_dependents(self, kind: str, owner: Object) -> None:
        uid = podutil.uid_of(owner)
        for dep_kind, dep in self._dependents(owner):
            refs = [
                r for r in podutil.meta(dep).get("ownerReferences") or [] if r.get("uid") != uid
            ]
            self._patch_refs(dep_kind, dep, refs)
        self._remove_finalizer(kind, owner, ORPHAN)

    def _process_foreground(self, kind: str, owner: Object) -> bool:
        """True when the owner could be released (no blocking dependents left)."""
        uid = podutil.uid_of(owner)
        blocking = 0
        for dep_kind, dep in self._dependents(owner):
            ref: Mapping[str, Any] = next(
                (r for r in podutil.meta(dep).get("ownerReferences") or [] if r.get("uid") == uid),
                {},
            )
            if ref.get("blockOwnerDeletion"):
                blocking += 1
            if not podutil.is_deleting(dep):
                policy = "Foreground" if self._dependents(dep) else "Background"
                self._delete(dep_kind, dep, policy)
        if blocking:
            return False
        self._remove_finalizer(kind, owner, FOREGROUND)
        return True


def init(ctx: ControllerContext) -> Controller:
    return GarbageCollector(ctx)
