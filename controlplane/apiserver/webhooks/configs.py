"""The webhook configurations in memory, fed by the API server's own watch
(an informer's cache): every ValidatingWebhookConfiguration and
MutatingWebhookConfiguration loaded once from a List and kept current by
the broadcaster's listener, so admitting a request never reads storage for
them. Webhooks are kept in Kubernetes' order: configurations by name, then
each configuration's `webhooks[]` in order.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from controlplane.api import jsoncodec
from controlplane.storage.interface import Event, EventType

Object = dict[str, Any]
VALIDATING = "ValidatingWebhookConfiguration"
MUTATING = "MutatingWebhookConfiguration"
PREFIXES = {
    "/registry/validatingwebhookconfigurations/": VALIDATING,
    "/registry/mutatingwebhookconfigurations/": MUTATING,
}


@dataclass(frozen=True)
class Hook:
    configuration: str
    name: str
    spec: Object  # the webhooks[] entry, defaulted as stored; never changed
    mutating: bool


class WebhookConfigs:
    prefixes = tuple(PREFIXES)  # the keys of the events on_event reads

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[tuple[str, str], Object] = {}  # (kind, name) -> configuration
        self._hooks: dict[str, tuple[Hook, ...]] = {VALIDATING: (), MUTATING: ()}

    def load(self, objects: Iterable[tuple[str, bytes]]) -> None:
        """(kind, stored JSON) of every configuration, from a List."""
        with self._lock:
            for kind, data in objects:
                obj = jsoncodec.loads(data)
                self._objects[(kind, str((obj.get("metadata") or {}).get("name") or ""))] = obj
            self._rebuild()

    def on_event(self, event: Event) -> None:
        """Broadcaster listener: cheap, never blocks."""
        for prefix, kind in PREFIXES.items():
            if not event.key.startswith(prefix):
                continue
            name = event.key[len(prefix) :]
            with self._lock:
                if event.type is EventType.DELETE:
                    self._objects.pop((kind, name), None)
                else:
                    self._objects[(kind, name)] = jsoncodec.loads(event.value)
                self._rebuild()
            return

    def _rebuild(self) -> None:
        for kind in (VALIDATING, MUTATING):
            hooks: list[Hook] = []
            for (k, name), obj in sorted(self._objects.items()):
                if k != kind:
                    continue
                for spec in obj.get("webhooks") or []:
                    if isinstance(spec, dict) and spec.get("name"):
                        hooks.append(Hook(name, str(spec["name"]), spec, kind == MUTATING))
            self._hooks[kind] = tuple(hooks)

    def validating(self) -> tuple[Hook, ...]:
        return self._hooks[VALIDATING]

    def mutating(self) -> tuple[Hook, ...]:
        return self._hooks[MUTATING]
