"""What a plugin may use of the scheduler that runs it: kube-scheduler's framework.Handle.

A plugin factory is `new(args, handle) -> plugin`; the plugin keeps the
`Handle` and never sees the concrete `Scheduler`. The handle offers:

- the snapshot: `cache` (node infos as arrays and `NodeInfo`s, pods placed or
  assumed, `node_of`, `pods_on`); read it under `cache.lock` (the scheduling
  cycle already holds it when a plugin runs);
- pods and pod groups: `pod_info(key)` (a pending or placed pod),
  `pod_group(key)` and `group_members(key)`; `disruption_budgets()` (the
  PodDisruptionBudgets, for preemption);
- waiting pods (Permit): `is_waiting`, `allow`, `reject`, and `activate` to
  pull pods forward in the queue;
- the plugins runner: `run_pre_filter` and `run_filters` of the pod's own
  profile (what preemption's dry runs need);
- the nominator: `nominate(pod, node)` and `clear_nomination(pod)`;
- the evictor: `evict(pod)` with the pod's own grace period;
- the binder: `bind(pod, node)`;
- storage: `volumes` (claims, volumes, classes: read-only, all PreFilter and
  Filter may use) and `volume_binder` (assume volumes, hold claims in
  flight, write claimRefs and selected nodes, wait for the PV controller:
  for Reserve, Unreserve and PreBind).

`NodeHandle` is the part a plugin that judges nodes needs (the cache,
`pod_info`, storage): the filters and scores take it, which is all the batch
scheduler, with no Permit stage, nominator or per-pod binder, offers them.
`CacheHandle` answers it from a scheduler's cache; the default scheduler's
handle extends it to the whole `Handle`.

Nothing here imports the framework or the scheduler: this is the bottom of
the plugin API, beneath `framework.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from controlplane.scheduler.cache import Cache
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import CycleState, Status
from controlplane.scheduler.volume_state import VolumeBinder, VolumeLister, VolumeState

Slots = npt.NDArray[np.intp]
Obj = dict[str, Any]


class NodeHandle(Protocol):
    """What a filter or score plugin may use: the cache, pods, storage."""

    @property
    def cache(self) -> Cache:
        """The scheduler's cache: the snapshot plugins filter and score against."""
        ...

    def pod_info(self, key: str) -> PodInfo | None:
        """The pod `namespace/name` as this scheduler knows it (pending or placed)."""
        ...

    @property
    def volumes(self) -> VolumeLister:
        """Claims, volumes and classes as the informers last saw them (read-only)."""
        ...

    @property
    def volume_binder(self) -> VolumeBinder:
        """Assume, provision and bind claims (Reserve, Unreserve and PreBind only)."""
        ...


class Handle(NodeHandle, Protocol):
    """The whole Handle: a NodeHandle and the scheduling cycle's other services."""

    # ---- pod groups -----------------------------------------------------------------

    def pod_group(self, key: str) -> Obj | None:
        """The PodGroup object named `namespace/name`, if the scheduler has seen it."""
        ...

    def group_members(self, key: str) -> Collection[str]:
        """Keys of the pods that name the group `namespace/name`."""
        ...

    def disruption_budgets(self) -> Collection[Obj]:
        """The PodDisruptionBudgets the scheduler has seen (preemption weighs them)."""
        ...

    # ---- waiting pods and the queue ----------------------------------------------

    def is_waiting(self, key: str) -> bool:
        """Whether the pod waits at Permit, holding its assumed place."""
        ...

    def allow(self, key: str) -> None:
        """Let a waiting pod go on to bind."""
        ...

    def reject(self, key: str, message: str) -> None:
        """Release a waiting pod's place and send it back to the queue."""
        ...

    def activate(self, keys: Iterable[str]) -> None:
        """Move these pods to the active queue (pull gang siblings forward)."""
        ...

    # ---- plugins runner ----------------------------------------------------------

    def run_pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        """PreFilter of the pod's profile against the cache as it is now."""
        ...

    def run_filters(self, state: CycleState, pod: PodInfo, slots: Slots) -> Slots:
        """The slots that pass every Filter of the pod's profile."""
        ...

    # ---- nominator, evictor, binder ------------------------------------------------

    def nominate(self, pod: PodInfo, node: str) -> None:
        """Hold `node` for `pod` (status.nominatedNodeName and the cache's nominations)."""
        ...

    def clear_nomination(self, pod: PodInfo) -> None: ...

    def evict(self, pod: PodInfo) -> None:
        """Delete a preemption victim with its own terminationGracePeriodSeconds."""
        ...

    def bind(self, pod: PodInfo, node: str) -> Status:
        """Write the bind (and the decision's score annotation)."""
        ...


class CacheHandle:
    """A NodeHandle answered from a scheduler's cache, its pending pods and its
    volume state; the rest of the Handle is each scheduler's own."""

    def __init__(
        self, cache: Cache, volumes: VolumeState, pending: Callable[[str], PodInfo | None]
    ) -> None:
        self._cache = cache
        self._volumes = volumes
        self._pending = pending

    @property
    def cache(self) -> Cache:
        return self._cache

    def pod_info(self, key: str) -> PodInfo | None:
        pending = self._pending(key)
        if pending is not None:
            return pending
        node = self._cache.node_of(key)
        info = self._cache.nodes.get(node) if node is not None else None
        return info.pods.get(key) if info is not None else None

    @property
    def volumes(self) -> VolumeLister:
        return self._volumes

    @property
    def volume_binder(self) -> VolumeBinder:
        return self._volumes
