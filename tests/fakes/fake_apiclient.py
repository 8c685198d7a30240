"""An in-memory ApiClient for unit tests of everything that talks to the API.

It keeps the API server's contract where callers can observe it: one global
resourceVersion counter, optimistic concurrency on update (Conflict), status
written only through update_status / the status subresource, generation bumped
on spec changes, generateName, label and field selectors, limit + continue,
finalizers and deletionTimestamp, watch from a resourceVersion with Gone for
versions older than the retained history, bookmarks, and the scale
subresource. Tests steer it with `fail()` (error injection), `end_watches()`
(the server closes watches), `compact()` (history expires), `bookmark()`, and
read `calls` (every call, in order). It is not thread-hostile: one lock
guards everything, so reflectors on other threads may use it.
"""

from __future__ import annotations

import copy
import itertools
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from controlplane.api import kinds
from controlplane.api.merge_patch import merge_patch as apply_merge_patch
from controlplane.client import errors
from controlplane.client.interface import (
    DeleteOptions,
    EventType,
    ListOptions,
    Object,
    ObjectList,
    WatchEvent,
)
from controlplane.client.selectors import (
    FieldSelector,
    Selector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from machinery.clock import Clock, RealClock

Key = tuple[str, str, str]  # kind, namespace ("" if cluster-scoped), name


@dataclass(frozen=True)
class Call:
    verb: str
    kind: str
    name: str = ""
    namespace: str | None = None
    body: Object | None = None


@dataclass
class _Injected:
    verb: str
    kind: str | None
    error: Exception
    times: int


_END = object()


def _selectors(options: ListOptions) -> tuple[Selector, FieldSelector]:
    """Parsed selectors; a bad one is Invalid, as the API server answers."""
    try:
        return (
            parse_label_selector(options.label_selector),
            parse_field_selector(options.field_selector),
        )
    except SelectorError as err:
        raise errors.Invalid(f"selector: {err}") from None


class FakeWatch:
    """An open watch on the fake: iterate for events; `stop()` ends it."""

    def __init__(
        self,
        owner: FakeApiClient,
        kind: str,
        namespace: str | None,
        options: ListOptions,
        bookmarks: bool,
    ) -> None:
        self._owner = owner
        self.kind = kind
        self.namespace = namespace
        self.bookmarks = bookmarks
        self._labels, self._fields = _selectors(options)
        self._queue: queue.Queue[Any] = queue.Queue()
        self.stopped = False

    def _matches(self, obj: Object) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return self._labels.matches(labels) and self._fields.matches(obj)

    def translate(
        self, kind: str, namespace: str, type_: EventType, obj: Object, old: Object | None
    ) -> WatchEvent | None:
        """The event this watch sees, as the API server computes it: selectors are
        checked on the old and new object, so an object that moves into the
        selection arrives as ADDED and one that leaves it as DELETED."""
        if kind != self.kind or (self.namespace and namespace != self.namespace):
            return None
        new_match = self._matches(obj)
        if type_ != "MODIFIED" or old is None:
            return WatchEvent(type_, copy.deepcopy(obj)) if new_match else None
        old_match = self._matches(old)
        if new_match and old_match:
            return WatchEvent("MODIFIED", copy.deepcopy(obj))
        if new_match:
            return WatchEvent("ADDED", copy.deepcopy(obj))
        if old_match:
            return WatchEvent("DELETED", copy.deepcopy(obj))
        return None

    def put(self, event: WatchEvent) -> None:
        self._queue.put(event)

    def end(self) -> None:
        self._queue.put(_END)

    def __iter__(self) -> Iterator[WatchEvent]:
        while True:
            item = self._queue.get()
            if item is _END:
                return
            yield item

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self._owner._forget_watch(self)
            self.end()


def _rfc3339(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeApiClient:
    """In-memory ApiClient. See the module docstring for what it models."""

    def __init__(
        self,
        clock: Clock | None = None,
        graceful_pod_delete: bool = False,
        strict_namespaces: bool = False,
    ) -> None:
        self.clock: Clock = clock or RealClock()
        # When True, the namespaces the API server makes at start exist and
        # creating into a missing namespace is NotFound, as on the server.
        # Off by default so unit tests need not create namespaces.
        self.strict_namespaces = strict_namespaces
        # When True, deleting a Pod bound to a node with a grace period only
        # marks it (deletionTimestamp), as the API server does until the agent
        # confirms; `finish_delete()` removes it.
        self.graceful_pod_delete = graceful_pod_delete
        self.calls: list[Call] = []
        self._lock = threading.RLock()
        self._objects: dict[Key, Object] = {}
        self._rv = 100
        self._compacted = 0  # events with rv <= this are gone from history
        # (resourceVersion, kind, namespace, event, object before the change)
        self._history: list[tuple[int, str, str, WatchEvent, Object | None]] = []
        self._watches: list[FakeWatch] = []
        self._errors: list[_Injected] = []
        self._uids = itertools.count(1)
        self._names = itertools.count(1)
        if strict_namespaces:
            for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
                self.create("Namespace", {"metadata": {"name": ns}})
            self.calls.clear()

    # ---- test controls -------------------------------------------------

    def fail(self, verb: str, error: Exception, kind: str | None = None, times: int = 1) -> None:
        """Make the next `times` calls of `verb` (optionally only for `kind`) raise `error`."""
        with self._lock:
            self._errors.append(_Injected(verb, kind, error, times))

    def compact(self) -> None:
        """Forget all watch history: watching from any older version raises Gone."""
        with self._lock:
            self._compacted = self._rv
            self._history.clear()

    def end_watches(self) -> None:
        """Close every open watch from the server side (iteration ends)."""
        with self._lock:
            watches, self._watches = self._watches, []
        for w in watches:
            w.end()

    def bookmark(self, kind: str) -> None:
        """Send a BOOKMARK with the current resourceVersion to watches of `kind`."""
        with self._lock:
            event = WatchEvent(
                "BOOKMARK", {"kind": kind, "metadata": {"resourceVersion": str(self._rv)}}
            )
            for w in self._watches:
                if w.kind == kind and w.bookmarks:
                    w.put(event)

    def open_watches(self, kind: str | None = None) -> int:
        with self._lock:
            return sum(1 for w in self._watches if kind is None or w.kind == kind)

    def calls_of(self, verb: str, kind: str | None = None) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.verb == verb and (kind is None or c.kind == kind)]

    def objects(self, kind: str, namespace: str | None = None) -> list[Object]:
        """Stored objects of a kind, without recording a call."""
        with self._lock:
            return [
                copy.deepcopy(o)
                for (k, ns, _), o in sorted(self._objects.items())
                if k == kind and (namespace is None or ns == namespace)
            ]

    @property
    def resource_version(self) -> str:
        with self._lock:
            return str(self._rv)

    def finish_delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        """Remove an object waiting in deletion (the agent confirmed, finalizers done)."""
        with self._lock:
            key = self._key(kind, name, namespace)
            if key in self._objects:
                self._remove(key)

    # ---- helpers ---------------------------------------------------------

    def _record(
        self,
        verb: str,
        kind: str,
        name: str = "",
        namespace: str | None = None,
        body: Object | None = None,
    ) -> None:
        self.calls.append(Call(verb, kind, name, namespace, copy.deepcopy(body)))
        for inj in self._errors:
            if inj.verb == verb and (inj.kind is None or inj.kind == kind) and inj.times > 0:
                inj.times -= 1
                if inj.times == 0:
                    self._errors.remove(inj)
                raise inj.error

    def _info(self, kind: str) -> kinds.KindInfo:
        try:
            return kinds.by_kind(kind)
        except kinds.UnknownKind as err:
            raise errors.Invalid(str(err)) from None

    def _ns(self, info: kinds.KindInfo, namespace: str | None) -> str:
        if not info.namespaced:
            return ""
        return namespace or "default"

    def _key(self, kind: str, name: str, namespace: str | None) -> Key:
        info = self._info(kind)
        return (info.kind, self._ns(info, namespace), name)

    def _not_found(self, key: Key) -> errors.NotFound:
        info = self._info(key[0])
        return errors.NotFound(f'{info.resource} "{key[2]}" not found')

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _emit(self, type_: EventType, key: Key, obj: Object, old: Object | None = None) -> None:
        rv = int(obj["metadata"]["resourceVersion"])
        event = WatchEvent(type_, copy.deepcopy(obj))
        before = copy.deepcopy(old) if old is not None else None
        self._history.append((rv, key[0], key[1], event, before))
        for w in self._watches:
            seen = w.translate(key[0], key[1], type_, obj, before)
            if seen is not None:
                w.put(seen)

    def _remove(self, key: Key) -> Object:
        obj = self._objects.pop(key)
        obj["metadata"]["resourceVersion"] = str(self._next_rv())
        self._emit("DELETED", key, obj)
        return obj

    def _store(self, key: Key, obj: Object, type_: EventType) -> Object:
        obj["metadata"]["resourceVersion"] = str(self._next_rv())
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._objects[key] = obj
            return self._remove(key)
        old = self._objects.get(key)
        self._objects[key] = obj
        self._emit(type_, key, obj, old)
        return copy.deepcopy(obj)

    # ---- the ApiClient protocol -----------------------------------------

    def create(self, kind: str, obj: Object, namespace: str | None = None) -> Object:
        with self._lock:
            info = self._info(kind)
            obj = copy.deepcopy(obj)
            meta = obj.setdefault("metadata", {})
            ns = self._ns(info, namespace or meta.get("namespace"))
            if namespace and meta.get("namespace") and namespace != meta["namespace"]:
                raise errors.Invalid(
                    f"metadata.namespace: does not match the namespace of the request ({namespace})"
                )
            name = meta.get("name") or ""
            self._record("create", info.kind, name, ns or None, obj)
            if not name:
                if not meta.get("generateName"):
                    raise errors.Invalid(
                        "metadata.name: Required value: name or generateName is required"
                    )
                name = f"{meta['generateName']}{next(self._names):05x}"
            key = (info.kind, ns, name)
            if self.strict_namespaces and ns and ("Namespace", "", ns) not in self._objects:
                raise errors.NotFound(f'namespaces "{ns}" not found')
            if key in self._objects:
                raise errors.AlreadyExists(f'{info.resource} "{name}" already exists')
            obj["apiVersion"] = obj.get("apiVersion") or info.api_version
            obj["kind"] = info.kind
            meta["name"] = name
            if info.namespaced:
                meta["namespace"] = ns
            else:
                meta.pop("namespace", None)
            meta["uid"] = f"00000000-0000-0000-0000-{next(self._uids):012d}"
            meta["creationTimestamp"] = _rfc3339(self.clock.utcnow())
            meta["generation"] = 1
            meta.pop("deletionTimestamp", None)
            return self._store(key, obj, "ADDED")

    def get(self, kind: str, name: str, namespace: str | None = None) -> Object:
        with self._lock:
            key = self._key(kind, name, namespace)
            self._record("get", key[0], name, key[1] or None)
            if key not in self._objects:
                raise self._not_found(key)
            return copy.deepcopy(self._objects[key])

    def list(
        self, kind: str, namespace: str | None = None, options: ListOptions | None = None
    ) -> ObjectList:
        options = options or ListOptions()
        with self._lock:
            info = self._info(kind)
            self._record("list", info.kind, "", namespace)
            labels, fields = _selectors(options)
            items = [
                o
                for (k, ns, _), o in sorted(self._objects.items())
                if k == info.kind
                and (not namespace or not info.namespaced or ns == namespace)
                and labels.matches(o["metadata"].get("labels"))
                and fields.matches(o)
            ]
            start = 0
            if options.continue_token:
                try:
                    start = int(options.continue_token)
                except ValueError:
                    raise errors.Invalid("continue: invalid token") from None
            end = len(items) if options.limit <= 0 else start + options.limit
            page = items[start:end]
            token = str(end) if end < len(items) else ""
            return ObjectList([copy.deepcopy(o) for o in page], str(self._rv), token)

    def _check_rv(self, key: Key, current: Object, obj: Object) -> None:
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv and rv != current["metadata"]["resourceVersion"]:
            raise errors.Conflict(
                f'Operation cannot be fulfilled on {self._info(key[0]).resource} "{key[2]}": '
                f"the object has been modified; please apply your changes to the latest version "
                f"and try again (current resourceVersion {current['metadata']['resourceVersion']})"
            )

    def _write_main(self, key: Key, current: Object, obj: Object) -> Object:
        info = self._info(key[0])
        new = copy.deepcopy(obj)
        meta = new.setdefault("metadata", {})
        old_meta = current["metadata"]
        for fixed in (
            "uid",
            "creationTimestamp",
            "namespace",
            "name",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ):
            if fixed in old_meta:
                meta[fixed] = old_meta[fixed]
            else:
                meta.pop(fixed, None)
        new["kind"] = info.kind
        new["apiVersion"] = new.get("apiVersion") or current.get("apiVersion")
        if info.has_status:
            if "status" in current:
                new["status"] = copy.deepcopy(current["status"])
            else:
                new.pop("status", None)
        meta["generation"] = old_meta.get("generation", 1) + (
            1 if new.get("spec") != current.get("spec") else 0
        )
        return self._store(key, new, "MODIFIED")

    def update(self, kind: str, obj: Object) -> Object:
        with self._lock:
            meta = obj.get("metadata") or {}
            key = self._key(kind, meta.get("name", ""), meta.get("namespace"))
            self._record("update", key[0], key[2], key[1] or None, obj)
            if key not in self._objects:
                raise self._not_found(key)
            current = self._objects[key]
            self._check_rv(key, current, obj)
            return self._write_main(key, current, obj)

    def _write_status(self, key: Key, current: Object, status: Any) -> Object:
        new = copy.deepcopy(current)
        if status is None:
            new.pop("status", None)
        else:
            new["status"] = copy.deepcopy(status)
        return self._store(key, new, "MODIFIED")

    def update_status(self, kind: str, obj: Object) -> Object:
        with self._lock:
            meta = obj.get("metadata") or {}
            key = self._key(kind, meta.get("name", ""), meta.get("namespace"))
            self._record("update_status", key[0], key[2], key[1] or None, obj)
            if key not in self._objects:
                raise self._not_found(key)
            current = self._objects[key]
            self._check_rv(key, current, obj)
            return self._write_status(key, current, obj.get("status"))

    def patch(
        self,
        kind: str,
        name: str,
        patch: Object,
        namespace: str | None = None,
        subresource: str = "",
    ) -> Object:
        with self._lock:
            key = self._key(kind, name, namespace)
            self._record("patch", key[0], name, key[1] or None, patch)
            if key not in self._objects:
                raise self._not_found(key)
            current = self._objects[key]
            merged = apply_merge_patch(current, patch)
            if not isinstance(merged, dict):
                raise errors.Invalid("patch: must be a JSON object")
            self._check_rv(
                key, current, merged if "resourceVersion" in (patch.get("metadata") or {}) else {}
            )
            if subresource == "status":
                return self._write_status(key, current, merged.get("status"))
            if subresource:
                raise errors.NotFound(f"subresource {subresource!r} not found")
            merged.get("metadata", {}).pop("resourceVersion", None)
            return self._write_main(key, current, merged)

    def delete(
        self,
        kind: str,
        name: str,
        namespace: str | None = None,
        options: DeleteOptions | None = None,
    ) -> Object | None:
        options = options or DeleteOptions()
        with self._lock:
            key = self._key(kind, name, namespace)
            self._record("delete", key[0], name, key[1] or None)
            if key not in self._objects:
                raise self._not_found(key)
            current = self._objects[key]
            meta = current["metadata"]
            if options.precondition_uid and options.precondition_uid != meta.get("uid"):
                raise errors.Conflict(
                    f"Precondition failed: UID in precondition: {options.precondition_uid}, UID in object meta: {meta.get('uid')}"
                )
            if (
                options.precondition_resource_version
                and options.precondition_resource_version != meta.get("resourceVersion")
            ):
                raise errors.Conflict("Precondition failed: resourceVersion does not match")
            finalizers = list(meta.get("finalizers") or [])
            if (
                options.propagation_policy == "Foreground"
                and "foregroundDeletion" not in finalizers
            ):
                finalizers.append("foregroundDeletion")
            graceful = (
                self.graceful_pod_delete
                and key[0] == "Pod"
                and (current.get("spec") or {}).get("nodeName")
                and options.grace_period_seconds != 0
            )
            if finalizers or graceful:
                if meta.get("deletionTimestamp"):
                    return copy.deepcopy(current)
                new = copy.deepcopy(current)
                new["metadata"]["finalizers"] = finalizers
                new["metadata"]["deletionTimestamp"] = _rfc3339(self.clock.utcnow())
                grace = options.grace_period_seconds
                new["metadata"]["deletionGracePeriodSeconds"] = 30 if grace is None else grace
                if not finalizers:
                    del new["metadata"]["finalizers"]
                    self._objects[key] = new
                    new["metadata"]["resourceVersion"] = str(self._next_rv())
                    self._emit("MODIFIED", key, new, current)
                    return copy.deepcopy(new)
                return self._store(key, new, "MODIFIED")
            self._remove(key)
            return None

    def watch(
        self,
        kind: str,
        namespace: str | None = None,
        options: ListOptions | None = None,
        allow_bookmarks: bool = True,
    ) -> FakeWatch:
        options = options or ListOptions()
        with self._lock:
            info = self._info(kind)
            self._record("watch", info.kind, "", namespace)
            w = FakeWatch(
                self, info.kind, namespace if info.namespaced else None, options, allow_bookmarks
            )
            if options.resource_version:
                since = int(options.resource_version)
                if since < self._compacted:
                    raise errors.Gone(f"too old resource version: {since} ({self._compacted})")
                for rv, kind_, ns, event, old in self._history:
                    if rv > since:
                        seen = w.translate(kind_, ns, event.type, event.object, old)
                        if seen is not None:
                            w.put(seen)
            self._watches.append(w)
            return w

    def _forget_watch(self, w: FakeWatch) -> None:
        with self._lock:
            if w in self._watches:
                self._watches.remove(w)

    def _scale_of(self, obj: Object) -> Object:
        sel = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        return {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {
                k: obj["metadata"][k]
                for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                if k in obj["metadata"]
            },
            "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 1)},
            "status": {
                "replicas": (obj.get("status") or {}).get("replicas", 0),
                "selector": ",".join(f"{k}={v}" for k, v in sorted(sel.items())),
            },
        }

    def get_scale(self, kind: str, name: str, namespace: str) -> Object:
        with self._lock:
            key = self._key(kind, name, namespace)
            self._record("get_scale", key[0], name, namespace)
            if not self._info(kind).has_scale:
                raise errors.NotFound(f"{self._info(kind).resource} have no scale subresource")
            if key not in self._objects:
                raise self._not_found(key)
            return self._scale_of(self._objects[key])

    def update_scale(self, kind: str, name: str, namespace: str, replicas: int) -> Object:
        with self._lock:
            key = self._key(kind, name, namespace)
            self._record("update_scale", key[0], name, namespace, {"replicas": replicas})
            if not self._info(kind).has_scale:
                raise errors.NotFound(f"{self._info(kind).resource} have no scale subresource")
            if key not in self._objects:
                raise self._not_found(key)
            if replicas < 0:
                raise errors.Invalid("spec.replicas: must be >= 0")
            current = self._objects[key]
            new = copy.deepcopy(current)
            new.setdefault("spec", {})["replicas"] = replicas
            self._write_main(key, current, new)
            return self._scale_of(self._objects[key])


__all__ = ["Call", "FakeApiClient", "FakeWatch"]
