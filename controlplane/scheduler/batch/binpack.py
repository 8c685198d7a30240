"""Volcano's binpack as a Framework score plugin: prefer the fullest node that fits.

Per resource r with weight w_r (`binpack.cpu`, `binpack.memory`, 1 each):
(requested_r + pod_r) / allocatable_r, weighted-averaged and scaled to 0..100;
a node the pod would overfill scores 0. Its Framework weight is `binpack.weight`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from controlplane.scheduler import resources
from controlplane.scheduler.cache import CPU_COL, MEM_COL, Cache
from controlplane.scheduler.framework import MAX_NODE_SCORE, Scores, Slots
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import CycleState

NAME = "BinPack"


class BinPack:
    name = NAME

    def __init__(self, cpu_weight: float = 1.0, memory_weight: float = 1.0) -> None:
        self.weights = (
            (CPU_COL, resources.CPU, cpu_weight),
            (MEM_COL, resources.MEMORY, memory_weight),
        )

    def score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Scores:
        total = np.zeros(len(slots), np.float64)
        weight_sum = 0.0
        over = np.zeros(len(slots), bool)
        for col, name, w in self.weights:
            want = pod.requests.get(name, 0)
            if not want or not w:
                continue
            alloc = cache.alloc[slots, col].astype(np.float64)
            used = cache.req[slots, col] + want
            over |= used > alloc
            total += w * np.divide(used, alloc, out=np.zeros(len(slots)), where=alloc > 0)
            weight_sum += w
        if not weight_sum:
            return np.zeros(len(slots), np.int64)
        out = (total / weight_sum * MAX_NODE_SCORE).astype(np.int64)
        out[over] = 0
        return out


def new(args: dict[str, Any]) -> BinPack:
    return BinPack(float(args.get("binpack.cpu", 1)), float(args.get("binpack.memory", 1)))
