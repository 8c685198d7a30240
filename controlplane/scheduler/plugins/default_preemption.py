"""DefaultPreemption: make room for a pod by evicting lower-priority pods (PostFilter).

For each node the filters rejected for a reason preemption can fix, remove
every lower-priority pod, check the pod fits, then put back ("reprieve") the
most important of them one by one while it still fits; what stays removed are
the victims. The node chosen has the lowest highest-victim priority, then the
lowest sum of victim priorities, then the fewest victims. Victims are evicted
with their own terminationGracePeriodSeconds, lower-priority pods nominated to
that node lose their nomination, and the preemptor gets nominatedNodeName so
the space is held for it while the victims terminate.

A member of a pod group is preempted for only if the whole gang fits after
it: with the victims gone and the member on its node, every other member
not yet placed must find a node (a dry run that places them one by one).
Coscheduling's PostFilter runs first and has released the waiting siblings,
so they count as not placed.

The dry runs temporarily remove pods from the live cache under its lock and
always put them back.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from controlplane.scheduler import names
from controlplane.scheduler.cache import NodeInfo
from controlplane.scheduler.framework import Diagnosis
from controlplane.scheduler.handle import Handle
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import Code, CycleState, Status, unschedulable

NAME = names.DEFAULT_PREEMPTION


class DefaultPreemption:
    name = NAME

    def __init__(
        self, handle: Handle, min_candidate_percentage: int = 10, min_candidate_absolute: int = 100
    ) -> None:
        self.handle = handle
        self.min_pct = min_candidate_percentage
        self.min_abs = min_candidate_absolute
        self.rng = random.Random(0)

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[Status, str]:
        h = self.handle
        if (pod.pod.get("spec") or {}).get("preemptionPolicy") == "Never":
            return unschedulable("not eligible due to preemptionPolicy=Never."), ""
        cache = h.cache
        if pod.nominated_node and self._victims_terminating(pod):
            return Status(Code.SUCCESS), pod.nominated_node
        unresolvable = diagnosis.unresolvable_slots()
        if diagnosis.pre_filter is not None and not diagnosis.pre_filter.ok:
            return unschedulable("PreFilter rejected the pod everywhere"), ""
        names = [n.name for n in cache.nodes.values() if n.slot not in unresolvable]
        if not names:
            return unschedulable(
                f"0/{diagnosis.num_nodes} nodes are available: preemption is not helpful."
            ), ""
        # Dry-run a bounded number of candidates, from a random offset (as kube does).
        limit = max(len(cache.nodes) * self.min_pct // 100, self.min_abs)
        offset = self.rng.randrange(len(names))
        names = names[offset:] + names[:offset]
        best: tuple[tuple[int, int, int], str, list[PodInfo]] | None = None
        found = 0
        with cache.lock:
            for name in names:
                victims = self.select_victims(pod, cache.nodes[name])
                if victims is None:
                    continue
                found += 1
                prios = [v.priority for v in victims]
                rank = (max(prios) if prios else -(2**31), sum(prios), len(prios))
                if best is None or rank < best[0]:
                    best = (rank, name, victims)
                if found >= limit:
                    break
        if best is None:
            return unschedulable(
                f"0/{diagnosis.num_nodes} nodes are available: no preemption victims found."
            ), ""
        _, node, victims = best
        if pod.pod_group and not self._gang_fits_after(pod, cache.nodes[node], victims):
            return unschedulable(
                f'preemption is not helpful: pod group "{pod.pod_group}" would still not fit'
            ), ""
        for v in victims:
            h.evict(v)
        for other, other_node in list(cache.nominated.values()):
            if other_node == node and other.priority < pod.priority:
                h.clear_nomination(other)
        h.nominate(pod, node)
        return Status(Code.SUCCESS), node

    def _victims_terminating(self, pod: PodInfo) -> bool:
        for other in self.handle.cache.pods_on(pod.nominated_node):
            meta = other.pod.get("metadata") or {}
            if meta.get("deletionTimestamp") and other.priority < pod.priority:
                return True
        return False

    def _gang_fits_after(self, pod: PodInfo, node: NodeInfo, victims: list[PodInfo]) -> bool:
        cache = self.handle.cache
        placed: list[tuple[PodInfo, NodeInfo]] = []
        with cache.lock:
            for v in victims:
                cache._unplace(v, node)
            try:
                cache._place(pod, node)
                placed.append((pod, node))
                for key in sorted(self.handle.group_members(pod.pod_group)):
                    if key == pod.key or cache.node_of(key) is not None:
                        continue
                    sibling = self.handle.pod_info(key)
                    if sibling is None:
                        continue
                    state = CycleState()
                    if not self.handle.run_pre_filter(state, sibling).ok:
                        return False
                    ok = self.handle.run_filters(state, sibling, cache.valid_slots())
                    if len(ok) == 0:
                        return False
                    name = cache.slot_names[int(ok[0])]
                    assert name is not None
                    cache._place(sibling, cache.nodes[name])
                    placed.append((sibling, cache.nodes[name]))
                return True
            finally:
                for p, info in reversed(placed):
                    cache._unplace(p, info)
                for v in victims:
                    if v.key not in node.pods:
                        cache._place(v, node)

    def _fits(self, pod: PodInfo, node: NodeInfo) -> bool:
        state = CycleState()
        if not self.handle.run_pre_filter(state, pod).ok:
            return False
        slots = np.array([node.slot], np.intp)
        return len(self.handle.run_filters(state, pod, slots)) == 1

    def select_victims(self, pod: PodInfo, node: NodeInfo) -> list[PodInfo] | None:
        """The fewest, least important pods on `node` whose removal lets `pod` fit."""
        cache = self.handle.cache
        lower = [
            p
            for p in node.pods.values()
            if p.priority < pod.priority
            and not (p.pod.get("metadata") or {}).get("deletionTimestamp")
        ]
        if not lower:
            return None
        for p in lower:
            cache._unplace(p, node)
        try:
            if not self._fits(pod, node):
                return None
            victims: list[PodInfo] = []
            # Most important first: try to keep them.
            for p in sorted(lower, key=lambda q: (-q.priority, q.created)):
                cache._place(p, node)
                if not self._fits(pod, node):
                    cache._unplace(p, node)
                    victims.append(p)
            return victims
        finally:
            for p in lower:
                if p.key not in node.pods:
                    cache._place(p, node)


def new(args: dict[str, Any], handle: Handle) -> DefaultPreemption:
    return DefaultPreemption(
        handle,
        int(args.get("minCandidateNodesPercentage", 10)),
        int(args.get("minCandidateNodesAbsolute", 100)),
    )
