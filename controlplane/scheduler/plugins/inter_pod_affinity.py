"""InterPodAffinity: required pod affinity/anti-affinity (filter), preferred terms (score).

Counting works on the cache's pod-signature matrix: the pods on each node are
grouped by (namespace, labels), a term's selector is evaluated once per
distinct signature, and the matching columns are summed; topology domains are
then formed with a bincount over the node's label codes for the term's
topologyKey. Existing pods' required anti-affinity terms are indexed the same
way, so "would this pod break somebody else's anti-affinity" is one column
lookup per distinct term.

Filter reasons are kube-scheduler's. A pod whose affinity terms match nothing
in the cluster but match the pod itself may go anywhere with the topology
labels (the first pod of a group).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from controlplane.scheduler import names
from controlplane.scheduler.cache import Cache
from controlplane.scheduler.framework import MAX_NODE_SCORE, FilterResult, Scores, Slots
from controlplane.scheduler.handle import NodeHandle
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import (
    NODE_ADD,
    NODE_UPDATE,
    POD_ADD,
    POD_DELETE,
    POD_UPDATE,
    SKIP,
    SUCCESS,
    ClusterEvent,
    Code,
    CycleState,
    Status,
)

NAME = names.INTER_POD_AFFINITY
R_EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
R_ANTI = "node(s) didn't match pod anti-affinity rules"
R_AFFINITY = "node(s) didn't match pod affinity rules"
Mask = npt.NDArray[np.bool_]


def _existing_anti(pod: PodInfo, cache: Cache) -> list[int]:
    return [i for i, t in enumerate(cache.anti_list) if t.matches(pod.namespace, pod.labels)]


class InterPodAffinity:
    name = NAME

    def pre_filter(self, state: CycleState, pod: PodInfo, cache: Cache) -> Status:
        # Columns of existing anti-affinity terms this pod matches, ignoring zero counts.
        cols = [c for c in _existing_anti(pod, cache) if cache.anti[: cache.n, c].any()]
        if not cols and not pod.affinity and not pod.anti_affinity:
            return SKIP
        state.data[NAME] = cols
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> FilterResult:
        cols: list[int] = state.data.get(NAME)  # type: ignore[assignment]
        if cols is None:
            cols = _existing_anti(pod, cache)
        ok = np.ones(len(slots), bool)
        reasons: list[tuple[str, Mask, Code]] = []
        bad = np.zeros(len(slots), bool)
        for c in cols:
            term = cache.anti_list[c]
            per_node = cache.anti[: cache.n, c].astype(np.int64)
            bad |= cache.domain_spread(term.topology_key, per_node)[slots] > 0
        if bad.any():
            reasons.append((R_EXISTING_ANTI, bad, Code.UNSCHEDULABLE))
            ok &= ~bad
        bad = np.zeros(len(slots), bool)
        for term in pod.anti_affinity:
            bad |= cache.domain_spread(term.topology_key, cache.count_term(term))[slots] > 0
        bad &= ok
        if bad.any():
            reasons.append((R_ANTI, bad, Code.UNSCHEDULABLE))
            ok &= ~bad
        if pod.affinity:
            fits = np.ones(len(slots), bool)
            has_keys = np.ones(len(slots), bool)
            none_anywhere = True
            for term in pod.affinity:
                counts = cache.count_term(term)
                if counts.any():
                    none_anywhere = False
                has_keys &= cache.codes(term.topology_key)[slots] >= 0
                fits &= cache.domain_spread(term.topology_key, counts)[slots] > 0
            if none_anywhere and all(t.matches(pod.namespace, pod.labels) for t in pod.affinity):
                fits = has_keys
            bad = ~(fits & has_keys) & ok
            if bad.any():
                reasons.append((R_AFFINITY, bad, Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
                ok &= ~bad
        return FilterResult(ok, reasons)

    def pre_score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Status:
        existing = [
            (term, w, c)
            for c, (term, w) in enumerate(cache.pref_list)
            if term.matches(pod.namespace, pod.labels) and cache.pref[: cache.n, c].any()
        ]
        if not existing and not pod.preferred_affinity and not pod.preferred_anti_affinity:
            return SKIP
        state.data[NAME + "/score"] = existing
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Scores:
        total = np.zeros(cache.n, np.int64)
        for w, term in pod.preferred_affinity:
            total += w * cache.domain_spread(term.topology_key, cache.count_term(term))
        for w, term in pod.preferred_anti_affinity:
            total -= w * cache.domain_spread(term.topology_key, cache.count_term(term))
        for term, w, c in state.data.get(NAME + "/score") or ():
            total += w * cache.domain_spread(
                term.topology_key, cache.pref[: cache.n, c].astype(np.int64)
            )
        return total[slots]

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: Scores) -> Scores:
        lo, hi = int(scores.min()), int(scores.max())
        if hi - lo <= 0:
            return np.zeros(len(scores), np.int64)
        return MAX_NODE_SCORE * (scores - lo) // (hi - lo)

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return [POD_ADD, POD_UPDATE, POD_DELETE, NODE_ADD, NODE_UPDATE]


def new(args: dict[str, Any], handle: NodeHandle) -> InterPodAffinity:
    return InterPodAffinity()
