"""Allocated resources (in-place pod resize, the kubelet 1.33 way): what the
node has granted each pod's resizable containers (its app containers and
native sidecars), which is what runs, whatever the spec asks for since.

A pod's allocation is its spec's resources when it is admitted. A later
resize (pods/resize, or an update) is allocated only if the node can hold
it: a pod asking for more cpu or memory than the node's allocatable is
`Infeasible` ("Node didn't have enough capacity: memory, requested: N,
capacity: M"); one that fits the node but not beside the other admitted
pods (their allocations) is `Deferred`, with the admission's message, and
retried at every sync. Either is the pod's `PodResizePending` condition,
while the pod keeps running with what it has. The allocation lives in
memory: an agent restart allocates what the spec says then.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.admission import admit, pod_requests, quantity

RESIZABLE = ("cpu", "memory")
Resources = dict[str, Any]  # a container's `resources` (requests, limits)


@dataclass(frozen=True)
class Pending:
    """Why a resize waits: reason Infeasible or Deferred, and the message."""

    reason: str
    message: str


def _resizable(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = pod.get("spec") or {}
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    return [*sidecars, *(spec.get("containers") or [])]


def _wanted(pod: Mapping[str, Any]) -> dict[str, Resources]:
    return {str(c["name"]): copy.deepcopy(c.get("resources") or {}) for c in _resizable(pod)}


def with_resources(pod: Mapping[str, Any], resources: Mapping[str, Resources]) -> dict[str, Any]:
    """The pod with its resizable containers' resources replaced (a copy)."""
    out = copy.deepcopy(dict(pod))
    for c in _resizable(out):
        if c["name"] in resources:
            c["resources"] = copy.deepcopy(resources[c["name"]])  # type: ignore[index]
    return out


def _capacity(node: Mapping[str, Any], name: str) -> float | None:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return quantity(allocatable[name]) if name in allocatable else None


def _amount(name: str, v: float) -> int:
    return round(v * 1000) if name == "cpu" else int(v)


def infeasible(pod: Mapping[str, Any], node: Mapping[str, Any]) -> str | None:
    """The kubelet's message when the pod asks for more than the node has."""
    want = pod_requests(pod)
    for name in ("memory", "cpu"):  # the kubelet names memory first
        cap = _capacity(node, name)
        if cap is not None and want.get(name, 0.0) > cap:
            return (
                f"Node didn't have enough capacity: {name}, requested: "
                f"{_amount(name, want[name])}, capacity: {_amount(name, cap)}"
            )
    return None


class Allocations:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._allocated: dict[str, dict[str, Resources]] = {}  # pod uid -> container -> resources

    def allocated(self, pod: Mapping[str, Any]) -> dict[str, Any]:
        """The pod as allocated (the spec's resources for one never seen):
        the pod object itself when its allocation is its spec's, a copy
        otherwise. Callers read it and never change it (a deep copy of every
        admitted pod at each admission and sync cost the agent CPU in
        proportion to the pods it runs)."""
        uid = str(pod["metadata"]["uid"])
        wanted = _wanted(pod)
        with self._lock:
            alloc = self._allocated.setdefault(uid, wanted)
            if alloc == wanted:  # no resize pending (nearly always): the pod itself
                return pod  # type: ignore[return-value]
            return with_resources(pod, alloc)

    def resources(self, uid: str) -> dict[str, Resources]:
        with self._lock:
            return copy.deepcopy(self._allocated.get(uid, {}))

    def sync(
        self,
        pod: Mapping[str, Any],
        node: Mapping[str, Any] | None,
        others: Callable[[], Sequence[Mapping[str, Any]]],
    ) -> tuple[dict[str, Any], Pending | None]:
        """Allocate the pod's resize if the node can hold it. Returns the pod
        to run (as allocated) and why a resize waits (None: nothing waits).
        `others`: the other admitted pods, as allocated."""
        uid = str(pod["metadata"]["uid"])
        wanted = _wanted(pod)
        with self._lock:
            alloc = self._allocated.setdefault(uid, wanted)
            if alloc == wanted:  # what runs is what the spec asks: no copy
                return pod, None  # type: ignore[return-value]
        resized = with_resources(pod, wanted)
        if node is not None:
            why = infeasible(resized, node)
            if why is not None:
                return self.allocated(pod), Pending("Infeasible", why)
            rejection = admit(resized, node, others())
            if rejection is not None and rejection.reason in ("OutOfcpu", "OutOfmemory"):
                return self.allocated(pod), Pending("Deferred", rejection.message)
        with self._lock:
            self._allocated[uid] = wanted
        return resized, None

    def forget(self, uid: str) -> None:
        with self._lock:
            self._allocated.pop(uid, None)
