"""The ValidatingAdmissionPolicies and their bindings, as last written:
loaded at start and kept current by the broadcaster's listener, so
admission never reads storage for them."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from controlplane.api.kinds import by_kind
from controlplane.apiserver.codec import ROOT, decode
from controlplane.storage.interface import Event, EventType

Object = dict[str, Any]
POLICY = "ValidatingAdmissionPolicy"
BINDING = "ValidatingAdmissionPolicyBinding"


class PolicyCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._prefixes = {f"{ROOT}{by_kind(k).storage_name}/": k for k in (POLICY, BINDING)}
        self.prefixes = tuple(self._prefixes)  # the keys of the events on_event reads
        self.policies: dict[str, Object] = {}
        self.bindings: dict[str, Object] = {}
        self.on_policy: Callable[[Object], None] | None = None  # the typecheck controller

    def load(self, items: dict[str, list[Object]]) -> None:
        with self._lock:
            self.policies = {o["metadata"]["name"]: o for o in items.get(POLICY, [])}
            self.bindings = {o["metadata"]["name"]: o for o in items.get(BINDING, [])}
        for policy in list(self.policies.values()):
            self._notify(policy)

    def on_event(self, event: Event) -> None:
        """Broadcaster listener: cheap, never blocks."""
        prefix = next((p for p in self._prefixes if event.key.startswith(p)), None)
        if prefix is None:
            return
        kind = self._prefixes[prefix]
        name = event.key[len(prefix) :]
        table = self.policies if kind == POLICY else self.bindings
        if event.type == EventType.DELETE:
            with self._lock:
                table.pop(name, None)
            return
        obj = decode(event.value, event.rev)
        with self._lock:
            table[name] = obj
        if kind == POLICY:
            self._notify(obj)

    def _notify(self, policy: Object) -> None:
        if self.on_policy is not None:
            self.on_policy(policy)

    def pairs(self) -> list[tuple[Object, Object]]:
        """(binding, policy) for every binding whose policy exists, by binding name."""
        with self._lock:
            found = []
            for name in sorted(self.bindings):
                binding = self.bindings[name]
                policy = self.policies.get(str((binding.get("spec") or {}).get("policyName")))
                if policy is not None:
                    found.append((binding, policy))
            return found

    def empty(self) -> bool:
        return not self.bindings
