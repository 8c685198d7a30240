"""TaintToleration: NoSchedule/NoExecute taints the pod does not tolerate reject the node;
PreferNoSchedule ones lower its score.

The cache keeps a node x distinct-taint boolean matrix, so the pod's
tolerations are checked once per distinct taint, not per node. The reason
names the taint as kube-scheduler does: `node(s) had untolerated taint {k: v}`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from controlplane.scheduler import names
from controlplane.scheduler.cache import Cache
from controlplane.scheduler.framework import FilterResult, Scores, Slots
from controlplane.scheduler.handle import NodeHandle
from controlplane.scheduler.plugins.node_affinity import default_normalize
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import (
    NODE_ADD,
    NODE_UPDATE,
    ClusterEvent,
    Code,
    CycleState,
    Status,
)

NAME = names.TAINT_TOLERATION


def untolerated(pod: PodInfo, cache: Cache, effects: tuple[str, ...]) -> list[tuple[int, str, str]]:
    out = []
    for (key, value, effect), col in cache.taint_cols.items():
        if effect in effects and not any(t.tolerates(key, value, effect) for t in pod.tolerations):
            out.append((col, key, value))
    return out


class TaintToleration:
    name = NAME

    def filter(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> FilterResult:
        ok = np.ones(len(slots), bool)
        if not cache.taint_cols:
            return FilterResult(ok)
        reasons: list[tuple[str, npt.NDArray[np.bool_], Code]] = []
        for col, key, value in untolerated(pod, cache, ("NoSchedule", "NoExecute")):
            bad = cache.taint_mat[slots, col] & ok
            if bad.any():
                reasons.append(
                    (
                        f"node(s) had untolerated taint {{{key}: {value}}}",
                        bad,
                        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    )
                )
                ok &= ~bad
        return FilterResult(ok, reasons)

    def pre_score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Status:
        cols = [c for c, _, _ in untolerated(pod, cache, ("PreferNoSchedule",))]
        return state.keep(NAME, cols)

    def score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Scores:
        cols = state.data.get(NAME) or []
        out: Scores = cache.taint_mat[slots][:, cols].sum(axis=1).astype(np.int64)
        return out

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: Scores) -> Scores:
        return default_normalize(scores, reverse=True)

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return [NODE_ADD, NODE_UPDATE]


def new(args: dict[str, Any], handle: NodeHandle) -> TaintToleration:
    return TaintToleration()
