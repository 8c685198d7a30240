"""DefaultPreemption: make room for a pod by evicting lower-priority pods (PostFilter).

For each node the filters rejected for a reason preemption can fix, remove
every lower-priority pod, check the pod fits, then put back ("reprieve") the
most important of them one by one while it still fits; what stays removed are
the victims. As kube-scheduler's DefaultPreemption, PodDisruptionBudgets
weigh in: the pods whose eviction would take a budget below zero
(`status.disruptionsAllowed`, counted down per matching victim, pods already
in `status.disruptedPods` not counted) are reprieved first, so they are
chosen last, and the node chosen has the fewest such PDB-violating victims,
then the lowest highest-victim priority, then the lowest sum of victim
priorities, then the fewest victims. A budget never blocks preemption. Victims are evicted
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
from collections.abc import Sequence
from typing import Any

import numpy as np

from controlplane.scheduler import names
from controlplane.scheduler.cache import NodeInfo
from controlplane.scheduler.framework import Diagnosis
from controlplane.scheduler.handle import Handle
from controlplane.scheduler.podinfo import PodInfo, Selector, label_selector
from controlplane.scheduler.types import Code, CycleState, Status, unschedulable

NAME = names.DEFAULT_PREEMPTION
Obj = dict[str, Any]


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
        best: tuple[tuple[int, int, int, int], str, list[PodInfo]] | None = None
        found = 0
        with cache.lock:
            budgets = list(h.disruption_budgets())
            for name in names:
                chosen = self.select_victims(pod, cache.nodes[name], budgets)
                if chosen is None:
                    continue
                victims, violating = chosen
                found += 1
                prios = [v.priority for v in victims]
                rank = (violating, max(prios) if prios else -(2**31), sum(prios), len(prios))
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

    def select_victims(
        self, pod: PodInfo, node: NodeInfo, budgets: Sequence[Obj] = ()
    ) -> tuple[list[PodInfo], int] | None:
        """The fewest, least important pods on `node` whose removal lets `pod`
        fit, and how many of them violate a PodDisruptionBudget; those are
        reprieved first (most important first within each group)."""
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
            ordered = sorted(lower, key=lambda q: (-q.priority, q.created))
            violating, other = pdb_violations(ordered, budgets)
            victims: list[PodInfo] = []
            n_violating = 0
            for group, counts in ((violating, True), (other, False)):
                for p in group:
                    cache._place(p, node)
                    if not self._fits(pod, node):
                        cache._unplace(p, node)
                        victims.append(p)
                        n_violating += counts
            return victims, n_violating
        finally:
            for p in lower:
                if p.key not in node.pods:
                    cache._place(p, node)


def _budget_selector(pdb: Obj) -> Selector | None:
    """The budget's selector, None when it selects nothing (nil, empty or invalid)."""
    raw = (pdb.get("spec") or {}).get("selector")
    if not isinstance(raw, dict) or not (raw.get("matchLabels") or raw.get("matchExpressions")):
        return None
    try:
        return label_selector(raw)
    except (KeyError, TypeError, AttributeError):
        return None


def pdb_violations(
    pods: Sequence[PodInfo], budgets: Sequence[Obj]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """(violating, not violating), each in the order given: kube-scheduler's
    filterPodsWithPDBViolation. Each matching budget's disruptionsAllowed is
    spent by the pods in order; a pod that takes one below zero violates it.
    A pod listed in the budget's status.disruptedPods is being evicted
    already and spends nothing."""
    allowed: list[int] = []
    selectors: list[tuple[str, Selector | None, Obj]] = []
    for pdb in budgets:
        meta, status = pdb.get("metadata") or {}, pdb.get("status") or {}
        value = status.get("disruptionsAllowed")
        allowed.append(value if isinstance(value, int) else 0)
        selectors.append((str(meta.get("namespace") or "default"), _budget_selector(pdb), status))
    violating: list[PodInfo] = []
    other: list[PodInfo] = []
    for p in pods:
        meta = p.pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        ns = str(meta.get("namespace") or "default")
        violated = False
        if labels:
            for i, (budget_ns, selector, status) in enumerate(selectors):
                if budget_ns != ns or selector is None or not selector.matches(labels):
                    continue
                if str(meta.get("name")) in (status.get("disruptedPods") or {}):
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else other).append(p)
    return violating, other


def new(args: dict[str, Any], handle: Handle) -> DefaultPreemption:
    return DefaultPreemption(
        handle,
        int(args.get("minCandidateNodesPercentage", 10)),
        int(args.get("minCandidateNodesAbsolute", 100)),
    )
