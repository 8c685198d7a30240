"""ImageLocality: prefer nodes that already have the pod's images.

sum over the pod's container images present on the node of
size * (nodes having the image / all nodes), clamped between 23 MB and
1000 MB per container, scaled to 0..100 — kube-scheduler's formula, which
spreads popular images' bonus thin to avoid piling pods on one node.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from controlplane.scheduler import names
from controlplane.scheduler.cache import Cache
from controlplane.scheduler.framework import MAX_NODE_SCORE, Scores, Slots
from controlplane.scheduler.handle import NodeHandle
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import CycleState, Status, relevant

NAME = names.IMAGE_LOCALITY
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


class ImageLocality:
    name = NAME

    def pre_score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Status:
        return relevant(any(i in cache.image_cols for i in pod.images))

    def score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Scores:
        total_nodes = max(cache.node_count(), 1)
        acc = np.zeros(len(slots), np.float64)
        for image in pod.images:
            col = cache.image_cols.get(image)
            if col is None:
                continue
            column = cache.image_size[: cache.n, col]
            spread = np.count_nonzero(column) / total_nodes
            acc += cache.image_size[slots, col] * spread
        summed = acc.astype(np.int64)
        max_threshold = MAX_CONTAINER_THRESHOLD * max(len(pod.images), 1)
        summed = np.clip(summed, MIN_THRESHOLD, max_threshold)
        return (
            MAX_NODE_SCORE * (summed - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)
        ).astype(np.int64)


def new(args: dict[str, Any], handle: NodeHandle) -> ImageLocality:
    return ImageLocality()
