"""The Secrets and ConfigMaps this node's pods use, watched one by one (the
kubelet's watch-based secret and configmap managers, its default
configMapAndSecretChangeDetectionStrategy: Watch).

A pod is registered while it is active on the node (and unregistered once
it has finished or is gone): every Secret and ConfigMap it names (volumes,
projected sources, env, envFrom, imagePullSecrets) gets one informer that
lists and watches that one object (field selector `metadata.name=<name>`,
what the node authorizer lets a node read), shared by every pod naming it
and stopped when the last one goes. `get` answers from the informer's cache
once it has synced, and from a GET before that (a pod's first start never
waits for a watch to open). Every change the watch delivers (added,
modified, deleted) is told to `on_change(kind, namespace, name)`, on the
informer's thread: it must be quick (the agent queues the pods using it
for a volume refresh).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controlplane.api.pod_references import pod_references
from controlplane.client import errors
from controlplane.client.informer import SharedInformer
from controlplane.client.interface import ApiClient, Object
from machinery.clock import Clock

log = logging.getLogger("skiff.agent.objects")

Key = tuple[str, str, str]  # (kind, namespace, name)
ChangeFunc = Callable[[str, str, str], None]


def pod_objects(pod: Mapping[str, Any]) -> set[Key]:
    """Every (kind, namespace, name) of a Secret or ConfigMap the pod names."""
    return {ref for ref in pod_references(pod) if ref[0] in ("Secret", "ConfigMap")}


@dataclass(eq=False)
class ObjectCache:
    api: ApiClient
    clock: Clock
    on_change: ChangeFunc
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _informers: dict[Key, SharedInformer] = field(default_factory=dict, init=False)
    # object -> uids of the pods naming it
    _users: dict[Key, set[str]] = field(default_factory=dict, init=False)
    # pod uid -> the objects it names
    _pods: dict[str, set[Key]] = field(default_factory=dict, init=False)
    _stopped: bool = field(default=False, init=False)

    # registration
    def register(self, pod: Mapping[str, Any]) -> None:
        """Watch what the (active) pod names; stop watching what it no longer does."""
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        if uid:
            self._set(uid, pod_objects(pod))

    def unregister(self, uid: str) -> None:
        """The pod finished or is gone: its objects are watched only for others."""
        self._set(uid, set())

    def _set(self, uid: str, keys: set[Key]) -> None:
        start: list[SharedInformer] = []
        stop: list[SharedInformer] = []
        with self._lock:
            before = self._pods.get(uid, set())
            if keys == before or self._stopped:
                return
            for key in keys - before:
                self._users.setdefault(key, set()).add(uid)
                if key not in self._informers:
                    informer = self._informer(key)
                    self._informers[key] = informer
                    start.append(informer)
            for key in before - keys:
                users = self._users.get(key, set())
                users.discard(uid)
                if not users:
                    self._users.pop(key, None)
                    stop.append(self._informers.pop(key))
            if keys:
                self._pods[uid] = keys
            else:
                self._pods.pop(uid, None)
        for informer in start:
            informer.start()
        for informer in stop:
            informer.stop(timeout=0)

    def _informer(self, key: Key) -> SharedInformer:
        kind, ns, name = key
        informer = SharedInformer(
            self.api, kind, namespace=ns, field_selector=f"metadata.name={name}", clock=self.clock
        )

        def changed(obj: Object) -> None:
            self.on_change(kind, ns, name)

        informer.add_event_handler(
            on_add=changed, on_update=lambda old, new: changed(new), on_delete=changed
        )
        return informer

    # reads
    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The object (None when it does not exist): from the watch's cache
        once synced, else from the API."""
        with self._lock:
            informer = self._informers.get((kind, namespace, name))
        if informer is not None and informer.has_synced():
            return informer.store.get(name, namespace)
        try:
            return self.api.get(kind, name, namespace)
        except errors.NotFound:
            return None

    def has_synced(self, kind: str, namespace: str, name: str) -> bool:
        """Whether the object is watched and its cache filled."""
        with self._lock:
            informer = self._informers.get((kind, namespace, name))
        return informer is not None and informer.has_synced()

    def users(self, kind: str, namespace: str, name: str) -> set[str]:
        """The uids of the registered pods that name the object."""
        with self._lock:
            return set(self._users.get((kind, namespace, name), ()))

    def watched(self) -> set[Key]:
        with self._lock:
            return set(self._informers)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            informers = list(self._informers.values())
            self._informers.clear()
            self._users.clear()
            self._pods.clear()
        for informer in informers:
            informer.stop(timeout=0)
