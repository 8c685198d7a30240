"""NodeResourcesFit: does the node have room for the pod's requests, and how full is it.

Filter: for every resource the pod requests (cpu, memory, ephemeral-storage,
extended resources) and for the pod count, allocatable - requested on the node
(counting assumed pods and higher-priority nominated pods) must cover it.
Reasons are kube-scheduler's: `Insufficient cpu`, `Too many pods`.

Score, by strategy (all integer arithmetic, as kube-scheduler's):
- LeastAllocated (spread): sum w*(alloc - req)*100/alloc / sum w
- MostAllocated (bin-pack): sum w*req*100/alloc / sum w
- RequestedToCapacityRatio: a piecewise-linear shape over utilisation.
CPU and memory use the "non-zero" requests (100m / 200Mi for pods that ask
for nothing), as kube-scheduler scores them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from controlplane.scheduler import resources
from controlplane.scheduler.cache import CPU_COL, MEM_COL, PODS_COL, Cache
from controlplane.scheduler.framework import (
    MAX_NODE_SCORE,
    FilterResult,
    Scores,
    Slots,
    score_rows,
)
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import (
    NODE_ADD,
    NODE_UPDATE,
    POD_DELETE,
    ClusterEvent,
    Code,
    CycleState,
)

NAME = "NodeResourcesFit"
STRATEGIES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")


class ConfigError(ValueError):
    pass


class NodeResourcesFit:
    name = NAME

    def __init__(
        self,
        strategy: str = "LeastAllocated",
        weights: Sequence[tuple[str, int]] = ((resources.CPU, 1), (resources.MEMORY, 1)),
        shape: Sequence[tuple[int, int]] = ((0, 10), (100, 0)),
    ) -> None:
        if strategy not in STRATEGIES:
            raise ConfigError(
                f"unknown scoring strategy {strategy!r}; known: {', '.join(STRATEGIES)}"
            )
        if any(w < 0 for _, w in weights) or not weights:
            raise ConfigError("resource weights must be positive")
        self.strategy = strategy
        self.weights = list(weights)
        self.shape = sorted(shape)

    # ---- filter --------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> FilterResult:
        names = ["pods", *pod.requests]
        cols = [PODS_COL, *(cache.res_col(name) for name in pod.requests)]
        amounts = np.array([1, *pod.requests.values()], np.int64)
        extra = cache.nominated_requests(pod)
        alloc = cache.rows(cache.alloc, slots)[:, cols]
        used = cache.rows(cache.req, slots)[:, cols]
        if extra is not None:
            used += extra[slots][:, cols]
        short = alloc - used < amounts
        bad = short.any(axis=1)
        if not bad.any():
            return FilterResult(~bad)
        reasons: list[tuple[str, npt.NDArray[np.bool_], Code]] = []
        for i, name in enumerate(names):
            col_short = short[:, i]
            if col_short.any():
                reason = "Too many pods" if i == 0 else f"Insufficient {name}"
                reasons.append((reason, col_short, Code.UNSCHEDULABLE))
        return FilterResult(~bad, reasons)

    # ---- score -----------------------------------------------------------

    def score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Scores:
        rows = score_rows(state, cache, slots)
        cols = [cache.res_col(name) for name, _ in self.weights]
        alloc = rows.alloc[:, cols]
        req = rows.req[:, cols]
        pod_req = []
        for i, (name, _) in enumerate(self.weights):
            if cols[i] == CPU_COL:
                req[:, i] = rows.nz[:, 0]
                pod_req.append(pod.nz_cpu)
            elif cols[i] == MEM_COL:
                req[:, i] = rows.nz[:, 1]
                pod_req.append(pod.nz_mem)
            else:
                pod_req.append(pod.requests.get(name, 0))
        req += np.array(pod_req, np.int64)
        w = np.array([w for _, w in self.weights], np.int64)
        safe = np.maximum(alloc, 1)
        if self.strategy == "LeastAllocated":
            per = (alloc - req) * MAX_NODE_SCORE // safe
            per[(alloc == 0) | (req > alloc)] = 0
        elif self.strategy == "MostAllocated":
            per = np.minimum(req, alloc) * MAX_NODE_SCORE // safe
            per[alloc == 0] = 0
        else:
            util = np.minimum(req, alloc) * 100 // safe
            util[alloc == 0] = 100
            per = self._shape(util)
            # A resource the node lacks does not count toward the weight sum.
            wm = np.where(alloc == 0, 0, w)
            wsum = wm.sum(axis=1)
            total = (per * wm).sum(axis=1)
            # math.Round: halves away from zero.
            return np.where(wsum == 0, 0, np.floor(total / np.maximum(wsum, 1) + 0.5)).astype(
                np.int64
            )
        out: Scores = (per @ w) // int(w.sum())
        return out

    def _shape(self, util: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """kube's broken-linear function; shape scores 0..10 scale to 0..100."""
        xs = [u for u, _ in self.shape]
        ys = [s * (MAX_NODE_SCORE // 10) for _, s in self.shape]
        out = np.full(util.shape, ys[-1], np.int64)
        done = np.zeros(util.shape, bool)
        for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
            here = (util <= x) & ~done
            if i == 0:
                out[here] = y
            else:
                x0, y0 = xs[i - 1], ys[i - 1]
                out[here] = y0 + (y - y0) * (util[here] - x0) // (x - x0)
            done |= here
        return out

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return [NODE_ADD, NODE_UPDATE, POD_DELETE]


def new(args: dict[str, Any]) -> NodeResourcesFit:
    strategy = args.get("scoringStrategy") or {}
    kind = strategy.get("type", "LeastAllocated")
    res = strategy.get("resources") or [
        {"name": "cpu", "weight": 1},
        {"name": "memory", "weight": 1},
    ]
    weights = [(r["name"], int(r.get("weight", 1))) for r in res]
    shape_raw = (strategy.get("requestedToCapacityRatio") or {}).get("shape") or [
        {"utilization": 0, "score": 10},
        {"utilization": 100, "score": 0},
    ]
    shape = [(int(p["utilization"]), int(p["score"])) for p in shape_raw]
    return NodeResourcesFit(kind, weights, shape)
