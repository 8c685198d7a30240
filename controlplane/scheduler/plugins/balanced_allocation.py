"""BalancedAllocation: prefer nodes whose resources are used in equal proportion.

Score = (1 - std) * 100 of the requested/allocatable fractions (capped at 1)
of cpu and memory; with two resources std = |cpu fraction - memory fraction| / 2,
the "fragmentation" of the node after placing the pod. Uses the actual
requests, as kube-scheduler does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from controlplane.scheduler import names, resources
from controlplane.scheduler.cache import Cache
from controlplane.scheduler.framework import MAX_NODE_SCORE, Scores, Slots, gather
from controlplane.scheduler.handle import NodeHandle
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import CycleState

NAME = names.BALANCED_ALLOCATION


class BalancedAllocation:
    name = NAME

    def __init__(self, resource_names: tuple[str, ...] = (resources.CPU, resources.MEMORY)) -> None:
        self.resource_names = resource_names

    def score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Scores:
        fracs = []
        for rname in self.resource_names:
            col = cache.res_col(rname)
            req = gather(state, cache, "req", col, slots) + pod.requests.get(rname, 0)
            alloc = gather(state, cache, "alloc", col, slots)
            fracs.append(np.minimum(req / np.maximum(alloc, 1), 1.0))
        pair = len(fracs) == 2
        std = np.abs(fracs[0] - fracs[1]) / 2 if pair else np.stack(fracs).std(axis=0)
        out: Scores = ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
        return out


def new(args: dict[str, Any], handle: NodeHandle) -> BalancedAllocation:
    names = tuple(r["name"] for r in args.get("resources") or ()) or (
        resources.CPU,
        resources.MEMORY,
    )
    return BalancedAllocation(names)
