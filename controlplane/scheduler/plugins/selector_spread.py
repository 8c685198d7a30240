"""SelectorSpread: spread pods of the same owner (ReplicaSet, StatefulSet, ...) over nodes and zones.

Pods are grouped by their controller ownerReference. Score per node is
100*(max - count)/max, blended 1/3 node and 2/3 zone
(`topology.kubernetes.io/zone`) when nodes carry zones — kube-scheduler's
SelectorSpread weighting.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from controlplane.scheduler import names
from controlplane.scheduler.cache import Cache
from controlplane.scheduler.framework import MAX_NODE_SCORE, Scores, Slots
from controlplane.scheduler.handle import Handle
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import CycleState, Status, relevant

NAME = names.SELECTOR_SPREAD
ZONE = "topology.kubernetes.io/zone"
ZONE_WEIGHT = 2.0 / 3.0


class SelectorSpread:
    name = NAME

    def pre_score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Status:
        return relevant(pod.owner and pod.owner in cache.owner_counts)

    def score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Scores:
        per_node = cache.owner_counts[pod.owner][: cache.n].astype(np.int64)
        counts = per_node[slots]
        top = int(counts.max())
        node_score = (
            np.full(len(slots), float(MAX_NODE_SCORE))
            if top == 0
            else MAX_NODE_SCORE * (top - counts) / top
        )
        zone_counts = cache.domain_spread(ZONE, per_node)[slots]
        has_zone = cache.codes(ZONE)[slots] >= 0
        if has_zone.any():
            ztop = int(zone_counts[has_zone].max())
            zone_score = (
                np.full(len(slots), float(MAX_NODE_SCORE))
                if ztop == 0
                else MAX_NODE_SCORE * (ztop - zone_counts) / ztop
            )
            node_score = np.where(
                has_zone, node_score * (1 - ZONE_WEIGHT) + ZONE_WEIGHT * zone_score, node_score
            )
        return node_score.astype(np.int64)


def new(args: dict[str, Any], handle: Handle) -> SelectorSpread:
    return SelectorSpread()
