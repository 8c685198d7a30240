"""PodTopologySpread: keep matching pods evenly spread over topology domains.

Filter (whenUnsatisfiable: DoNotSchedule): for each constraint, the node's
domain count of matching pods, plus one if the pod matches its own selector,
minus the smallest domain count, must not exceed maxSkew. Counting covers the
nodes that satisfy the pod's node affinity/selector and carry every
constraint's topology key (nodeAffinityPolicy Honor, as kube-scheduler's
default); a node without the key is rejected as unresolvable.

Score (ScheduleAnyway): sum count*log(domains + 2) + (maxSkew - 1), then
inverted so the least crowded domain scores 100, as kube-scheduler does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from controlplane.scheduler import names
from controlplane.scheduler.cache import Cache
from controlplane.scheduler.framework import MAX_NODE_SCORE, FilterResult, Scores, Slots
from controlplane.scheduler.handle import NodeHandle
from controlplane.scheduler.plugins.node_affinity import required_mask
from controlplane.scheduler.podinfo import PodInfo, SpreadConstraint
from controlplane.scheduler.types import (
    NODE_ADD,
    NODE_UPDATE,
    POD_ADD,
    POD_DELETE,
    ClusterEvent,
    Code,
    CycleState,
    Status,
    relevant,
)

NAME = names.POD_TOPOLOGY_SPREAD
R_SKEW = "node(s) didn't match pod topology spread constraints"
R_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"
Mask = npt.NDArray[np.bool_]


def _matching(cache: Cache, pod: PodInfo, c: SpreadConstraint) -> npt.NDArray[np.int64]:
    ns, sel = pod.namespace, c.selector
    return cache.count_matching(
        ("spread", ns, sel), lambda n, labels: n == ns and sel.matches(labels), sel.keys
    )


def _eligible(cache: Cache, pod: PodInfo, constraints: Sequence[SpreadConstraint]) -> Mask:
    """Nodes whose pods count: matching the pod's node affinity and having every key."""
    keys = tuple(sorted({c.topology_key for c in constraints}))
    memo_key = (
        "spread-eligible",
        tuple(sorted(pod.node_selector.items())),
        pod.required_node_terms,
        keys,
    )

    def compute() -> Mask:
        all_slots = np.arange(cache.n)
        m: Mask = cache.valid[: cache.n] & required_mask(cache, pod, all_slots)
        for key in keys:
            m &= cache.codes(key) >= 0
        return m

    out: Mask = cache.node_memo(memo_key, compute)
    return out


class PodTopologySpread:
    name = NAME

    def pre_filter(self, state: CycleState, pod: PodInfo, cache: Cache) -> Status:
        return relevant(any(c.when_unsatisfiable == "DoNotSchedule" for c in pod.spread))

    def _allowed_tables(
        self, state: CycleState, pod: PodInfo, cache: Cache
    ) -> list[tuple[str, Mask]]:
        """Per hard constraint: its topology key and, per domain code, whether placing fits.

        The table has one extra last entry (False) that a node without the key
        (code -1) looks up. Computed once per scheduling cycle.
        """
        cached: list[tuple[str, Mask]] | None = state.data.get(NAME + "/tables")
        if cached is not None:
            return cached
        hard = [c for c in pod.spread if c.when_unsatisfiable == "DoNotSchedule"]
        eligible = _eligible(cache, pod, hard)
        tables: list[tuple[str, Mask]] = []
        for c in hard:
            # Bucket 0 collects nodes without the key (code -1); it is dropped.
            dom1 = cache.codes(c.topology_key) + 1
            ndom = len(cache.label_values[c.topology_key])
            per_node = _matching(cache, pod, c) * eligible
            sums = np.bincount(dom1, weights=per_node, minlength=ndom + 1)[1:].astype(np.int64)
            present = np.bincount(dom1, weights=eligible, minlength=ndom + 1)[1:] > 0
            domains = int(present.sum())
            min_match = int(sums[present].min()) if domains else 0
            if domains < c.min_domains:
                min_match = 0
            self_match = 1 if c.selector.matches(pod.labels) else 0
            table = np.zeros(ndom + 1, bool)
            table[:ndom] = sums + self_match - min_match <= c.max_skew
            tables.append((c.topology_key, table))
        state.data[NAME + "/tables"] = tables
        return tables

    def filter(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> FilterResult:
        ok = np.ones(len(slots), bool)
        missing = np.zeros(len(slots), bool)
        skewed = np.zeros(len(slots), bool)
        for key, table in self._allowed_tables(state, pod, cache):
            d = cache.codes(key)[slots]
            absent = d < 0
            missing |= absent
            skewed |= ~table[d] & ~absent
        reasons: list[tuple[str, Mask, Code]] = []
        if missing.any():
            reasons.append((R_LABEL, missing, Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
            ok &= ~missing
        skewed &= ok
        if skewed.any():
            reasons.append((R_SKEW, skewed, Code.UNSCHEDULABLE))
            ok &= ~skewed
        return FilterResult(ok, reasons)

    def pre_score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Status:
        return relevant(any(c.when_unsatisfiable == "ScheduleAnyway" for c in pod.spread))

    def score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Scores:
        soft = [c for c in pod.spread if c.when_unsatisfiable == "ScheduleAnyway"]
        eligible = _eligible(cache, pod, soft)
        ignored = np.zeros(len(slots), bool)
        total = np.zeros(len(slots), np.float64)
        for c in soft:
            dom = cache.codes(c.topology_key)
            ignored |= dom[slots] < 0
            per_node = np.where(eligible, _matching(cache, pod, c), 0)
            counts = cache.domain_spread(c.topology_key, per_node)[slots]
            d = dom[slots]
            domains = len(np.unique(d[d >= 0]))
            weight = math.log(domains + 2)
            total += counts * weight + (c.max_skew - 1)
        scores = np.rint(total).astype(np.int64)
        state.data[NAME + "/ignored"] = ignored
        return np.where(ignored, -1, scores)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: Scores) -> Scores:
        ignored = scores < 0
        valid = scores[~ignored]
        if len(valid) == 0:
            return np.zeros(len(scores), np.int64)
        lo, hi = int(valid.min()), int(valid.max())
        if hi == 0:
            out = np.full(len(scores), MAX_NODE_SCORE, np.int64)
        else:
            out = MAX_NODE_SCORE * (hi + lo - scores) // hi
        return np.where(ignored, 0, out)

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return [POD_ADD, POD_DELETE, NODE_ADD, NODE_UPDATE]


def new(args: dict[str, Any], handle: NodeHandle) -> PodTopologySpread:
    return PodTopologySpread()
