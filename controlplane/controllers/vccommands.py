"""Volcano Commands (bus.volcano.sh/v1alpha1) as a controller's inbox.

A Command names an action for one target (a Job or a Queue); the controller
of that kind acts on it once and deletes it, as Volcano's job and queue
controllers do. Between the delete and its event the Command is still in
the informer's store, so a consumed Command is remembered by uid until its
delete event comes, and is never acted on twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.controllers import podutil
from controlplane.controllers.base import Controller


def _order(cmd: Object) -> tuple[str, str]:
    return (str(cmd["metadata"].get("creationTimestamp") or ""), podutil.name_of(cmd))


class CommandInbox:
    """The Commands `controller` acts on: indexed under `index` by `target`
    (the keys of what a Command is for), each new one queueing its target."""

    def __init__(
        self, controller: Controller, index: str, target: Callable[[Object], list[str]]
    ) -> None:
        self.controller = controller
        self.index = index
        self.informer = controller.watch("Command", {index: target})
        self.consumed: set[str] = set()  # uids of Commands deleted, until their event
        self._lock = threading.Lock()

        def added(cmd: Object) -> None:
            for key in target(cmd):
                controller.enqueue_key(key)

        controller.follow(self.informer, added, self._deleted)

    def _deleted(self, cmd: Object) -> None:
        with self._lock:
            self.consumed.discard(podutil.uid_of(cmd))

    def pending(self, key: str) -> list[Object]:
        """The Commands for `key` not yet consumed, oldest first."""
        found = sorted(self.informer.store.by_index(self.index, key), key=_order)
        with self._lock:
            return [c for c in found if podutil.uid_of(c) not in self.consumed]

    def consume(self, cmd: Object) -> None:
        """Delete `cmd`: it is acted on, and never returned again."""
        with self._lock:
            self.consumed.add(podutil.uid_of(cmd))
        try:
            self.controller.client.delete(
                "Command", podutil.name_of(cmd), podutil.namespace_of(cmd)
            )
        except errors.NotFound:
            pass  # gone already; its delete event clears `consumed`
