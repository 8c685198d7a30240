"""Namespace cleanup: deleting a namespace deletes everything in it.

Deleting a Namespace only marks it Terminating (deletionTimestamp set, the
`kubernetes` finalizer in spec.finalizers). This loop, running inside the
control-plane process, deletes every namespaced object in such a namespace
(with the default options, so pods bound to a node still stop gracefully)
and, once nothing is left, removes the namespace itself. It is woken by
watch events (a namespace marked for deletion, an object removed from a
terminating namespace) and retries with backoff while objects remain; it
resumes terminating namespaces found at start. It acts with the system
identity and never touches other namespaces.
"""

from __future__ import annotations

import logging
import threading

from controlplane.api.kinds import all_kinds
from controlplane.apiserver.codec import ROOT, decode
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import ApiError, NotFound
from controlplane.storage.interface import Event, EventType

log = logging.getLogger(__name__)

_NAMESPACE_PREFIX = f"{ROOT}namespaces/"


class NamespaceCleaner:
    def __init__(self, registry: Registry, retry_interval: float = 1.0) -> None:
        self.registry = registry
        self.retry_interval = retry_interval
        self._pending: set[str] = set()
        self._terminating: set[str] = set()
        self._cond = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="namespace-cleaner", daemon=True)

    def start(self) -> None:
        for item, rev in self.registry.list("Namespace").items:
            ns = decode(item, rev)
            if ns["metadata"].get("deletionTimestamp"):
                self.enqueue(ns["metadata"]["name"])
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join(5)

    def enqueue(self, name: str) -> None:
        with self._cond:
            self._terminating.add(name)
            self._pending.add(name)
            self._cond.notify_all()

    def on_event(self, event: Event) -> None:
        """Broadcaster listener: cheap, never blocks."""
        if event.key.startswith(_NAMESPACE_PREFIX):
            if event.type != EventType.DELETE and b'"deletionTimestamp"' in event.value:
                self.enqueue(event.key[len(_NAMESPACE_PREFIX) :])
            return
        if event.type == EventType.DELETE and self._terminating:
            rest = event.key[len(ROOT) :].split("/")
            if len(rest) == 3 and rest[1] in self._terminating:
                with self._cond:
                    self._pending.add(rest[1])
                    self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stop:
                    self._cond.wait(self.retry_interval if self._terminating else None)
                    if not self._pending and self._terminating:
                        self._pending |= self._terminating
                if self._stop:
                    return
                batch, self._pending = self._pending, set()
            for name in sorted(batch):
                try:
                    if self.clean(name):
                        with self._cond:
                            self._terminating.discard(name)
                except ApiError as err:
                    log.warning("namespace %s: cleanup failed: %s", name, err)

    def clean(self, name: str) -> bool:
        """One pass over a terminating namespace; True when it is gone."""
        try:
            ns = self.registry.get_object("Namespace", name)
        except NotFound:
            return True
        if not ns["metadata"].get("deletionTimestamp"):
            return True
        remaining = 0
        for info in all_kinds():
            if not info.namespaced or info.create_only:  # create-only: never stored
                continue
            for item, _ in self.registry.list(info.key, name).items:
                remaining += 1
                obj = decode(item)
                if obj["metadata"].get("deletionTimestamp"):
                    continue
                try:
                    self.registry.delete(info.key, obj["metadata"]["name"], name)
                except NotFound:
                    pass
        if remaining:
            return False
        self.registry.remove_finalized_namespace(name)
        try:
            self.registry.get_object("Namespace", name)
        except NotFound:
            log.info("namespace %s: deleted with its contents", name)
            return True
        return False
