"""An in-memory ClusterWriter for scheduler tests and the scheduler benchmark.

`InMemoryCluster` keeps pods and nodes in dicts, applies binds at once (or
fails them on request), deletes evicted pods after their grace period on its
clock, and queues watch-like events that a test feeds to the scheduler's
handlers (`drain_events`).
"""

from __future__ import annotations

import copy
import threading
from typing import Any

from controlplane.scheduler.binder import BindError, bind_each
from machinery.clock import Clock, RealClock

Obj = dict[str, Any]


def _key(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


class InMemoryCluster:
    """Pods and nodes in dicts; records every write; events queue up for the scheduler."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or RealClock()
        self.lock = threading.Lock()
        self.pods: dict[str, Obj] = {}
        self.nodes: dict[str, Obj] = {}
        self.events: list[tuple[str, str, Obj]] = []  # (kind, type, object) for the scheduler
        self.binds: list[tuple[str, str]] = []
        self.fail_binds: set[str] = set()  # pod keys whose bind fails
        self.terminating: dict[str, float] = {}  # pod key -> deletion deadline
        self.messages: dict[str, str] = {}
        self.record_events = True

    def _emit(self, kind: str, type_: str, obj: Obj) -> None:
        if self.record_events:
            self.events.append((kind, type_, obj))

    def add_node(self, node: Obj) -> None:
        with self.lock:
            self.nodes[node["metadata"]["name"]] = node
            self._emit("Node", "ADDED", node)

    def delete_node(self, name: str) -> None:
        with self.lock:
            node = self.nodes.pop(name, None)
            if node is not None:
                self._emit("Node", "DELETED", node)

    def add_pod(self, pod: Obj) -> None:
        with self.lock:
            self.pods[_key(pod)] = pod
            self._emit("Pod", "ADDED", pod)

    def delete_pod(self, key: str) -> None:
        with self.lock:
            pod = self.pods.pop(key, None)
            self.terminating.pop(key, None)
            if pod is not None:
                self._emit("Pod", "DELETED", pod)

    def drain_events(self) -> list[tuple[str, str, Obj]]:
        with self.lock:
            out, self.events = self.events, []
            return out

    def advance(self) -> None:
        """Delete the terminating pods whose grace period has ended."""
        now = self.clock.monotonic()
        for key, deadline in list(self.terminating.items()):
            if deadline <= now:
                self.delete_pod(key)

    # ---- ClusterWriter ----------------------------------------------------

    def bind(self, pod: Obj, node: str, annotations: dict[str, str] | None = None) -> None:
        key = _key(pod)
        with self.lock:
            if key in self.fail_binds:
                raise BindError(f"bind of {key} refused")
            if node not in self.nodes:
                raise BindError(f'node "{node}" not found')
            current = self.pods.get(key)
            if current is None:
                raise BindError(f'pod "{key}" not found')
            if (current.get("spec") or {}).get("nodeName"):  # refused as the API server does
                raise BindError(
                    f'pod {key} is already assigned to node "{current["spec"]["nodeName"]}"'
                )
            bound = copy.copy(current)
            bound["spec"] = dict(current.get("spec") or {}, nodeName=node)
            if annotations:
                meta = dict(current.get("metadata") or {})
                meta["annotations"] = dict(meta.get("annotations") or {}, **annotations)
                bound["metadata"] = meta
            self.pods[key] = bound
            self.binds.append((key, node))
            self._emit("Pod", "MODIFIED", bound)

    def bind_many(
        self, items: list[tuple[Obj, str, dict[str, str] | None]]
    ) -> list[BindError | None]:
        """`bind` of each (pod, node, annotations); per item None or its error."""
        return bind_each(self.bind, items)

    def set_nominated_node(self, pod: Obj, node: str) -> None:
        key = _key(pod)
        with self.lock:
            current = self.pods.get(key)
            if current is not None:
                status = dict(current.get("status") or {}, nominatedNodeName=node)
                self.pods[key] = dict(current, status=status)

    def evict(self, pod: Obj, grace_seconds: int) -> None:
        key = _key(pod)
        with self.lock:
            current = self.pods.get(key)
            if current is None:
                return
            meta = dict(current.get("metadata") or {})
            meta["deletionTimestamp"] = self.clock.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
            meta["deletionGracePeriodSeconds"] = grace_seconds
            updated = dict(current, metadata=meta)
            self.pods[key] = updated
            self.terminating[key] = self.clock.monotonic() + grace_seconds
            self._emit("Pod", "MODIFIED", updated)
        if grace_seconds <= 0:
            self.delete_pod(key)

    def report_unschedulable(self, pod: Obj, message: str) -> None:
        with self.lock:
            self.messages[_key(pod)] = message
