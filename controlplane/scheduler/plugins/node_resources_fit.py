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

from controlplane.scheduler import names, resources
from controlplane.scheduler.cache import CPU_COL, MEM_COL, PODS_COL, Cache
from controlplane.scheduler.framework import (
    MAX_NODE_SCORE,
    FilterResult,
    Scores,
    Slots,
    gather,
)
from controlplane.scheduler.handle import NodeHandle
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import (
    NODE_ADD,
    NODE_UPDATE,
    POD_DELETE,
    ClusterEvent,
    Code,
    CycleState,
)

NAME = names.NODE_RESOURCES_FIT
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
        checks = [("Too many pods", PODS_COL, 1)]
        checks += [
            (f"Insufficient {name}", cache.res_col(name), v) for name, v in pod.requests.items()
        ]
        # Only now: a resource seen for the first time widens (replaces) the arrays.
        extra = cache.nominated_requests(pod)
        free = cache.free
        full = len(slots) == cache.n
        shorts: list[tuple[str, npt.NDArray[np.bool_]]] = []
        bad: npt.NDArray[np.bool_] | None = None
        for reason, col, amount in checks:
            column = free[: cache.n, col] if full else free[slots, col]
            if extra is not None:
                column = column - extra[slots, col]
            short = column < amount
            shorts.append((reason, short))
            bad = short if bad is None else bad | short
        assert bad is not None
        if not bad.any():
            return FilterResult(~bad)
        reasons = [(r, m, Code.UNSCHEDULABLE) for r, m in shorts if m.any()]
        return FilterResult(~bad, reasons)

    # ---- score -----------------------------------------------------------

    def score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Scores:
        total: Scores | None = None
        wsum = 0
        rtc_weights: list[npt.NDArray[np.int64]] = []
        rtc_scores: list[npt.NDArray[np.int64]] = []
        for name, w in self.weights:
            col = cache.res_col(name)
            alloc = gather(state, cache, "alloc", col, slots)
            if col == CPU_COL:
                req = gather(state, cache, "nz", 0, slots) + pod.nz_cpu
            elif col == MEM_COL:
                req = gather(state, cache, "nz", 1, slots) + pod.nz_mem
            else:
                req = gather(state, cache, "req", col, slots) + pod.requests.get(name, 0)
            safe = np.maximum(alloc, 1)
            if self.strategy == "LeastAllocated":
                # Over-committed or absent resources give negative values: 0.
                per = np.maximum((alloc - req) * MAX_NODE_SCORE // safe, 0)
            elif self.strategy == "MostAllocated":
                per = np.minimum(req, alloc) * MAX_NODE_SCORE // safe
            else:
                util = np.where(alloc == 0, 100, np.minimum(req, alloc) * 100 // safe)
                rtc_scores.append(self._shape(util))
                # A resource the node lacks does not count toward the weight sum.
                rtc_weights.append(np.where(alloc == 0, 0, w))
                continue
            total = per * w if total is None else total + per * w
            wsum += w
        if rtc_scores:
            ws = sum(rtc_weights)
            summed = sum(s * wt for s, wt in zip(rtc_scores, rtc_weights, strict=True))
            # math.Round: halves away from zero.
            out: Scores = np.where(ws == 0, 0, np.floor(summed / np.maximum(ws, 1) + 0.5)).astype(
                np.int64
            )
            return out
        assert total is not None
        result: Scores = total // wsum
        return result

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


def new(args: dict[str, Any], handle: NodeHandle) -> NodeResourcesFit:
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
