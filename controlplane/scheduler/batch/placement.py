"""Where a task goes: the Framework's filters and scores, once per task template per session.

The pods of one task are identical but for their names, and a session
places many of them in a row. When what a pod asks can only be judged node
by node (its requests, ports, node selector, tolerations, images), each
node's verdict and score depend on that node's own row alone; so the first
pod of such a template is filtered and scored on every node, and the next
ones only on the nodes whose row changed since (the cache's `slot_gen`: a
pod placed, evicted or given back there). Volcano keeps a predicate cache per
task template for the same reason.

A pod takes this path when the plugins that look beyond a node all say SKIP
at PreFilter and PreScore (inter-pod affinity, topology spread, volumes),
no score it gets is normalised over the nodes (node affinity's and taint
toleration's preferences: SKIP too), and no pod is nominated. Any other pod,
and any pod that fits nowhere (for the diagnosis), goes through
`Framework.schedule` as before. Scores here are taken over every feasible
node rather than a sample of them (percentageOfNodesToScore), since the
template pays for it once; ties are broken by the Framework's random choice.
Of those plugins, the ones that read only the node's own facts (conditions,
taints, labels, images) cannot change their verdict within a session; a
node judged again after a placement is judged by the others only (its
resources and ports).

A `Placer` lives for one session: the cache does not change under it but
through the session's own statements.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from controlplane.scheduler import names
from controlplane.scheduler.batch import binpack
from controlplane.scheduler.cache import Cache
from controlplane.scheduler.framework import Framework, ScheduleResult
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import CycleState

# Filters that judge a node by its own row, and scores of it that are not
# normalised over the nodes (ImageLocality's spread counts nodes, which do
# not change within a session).
NODE_LOCAL_FILTERS = frozenset((
    names.NODE_UNSCHEDULABLE, names.NODE_NAME, names.TAINT_TOLERATION, names.NODE_AFFINITY,
    names.NODE_PORTS, names.NODE_RESOURCES_FIT, names.NODE_CONDITIONS,
))  # fmt: skip
NODE_LOCAL_SCORES = frozenset(
    (names.NODE_RESOURCES_FIT, names.BALANCED_ALLOCATION, names.IMAGE_LOCALITY, binpack.NAME)
)
# Of those, the ones whose answer depends on the pods placed on the node.
POD_FILTERS = frozenset((names.NODE_PORTS, names.NODE_RESOURCES_FIT))
POD_SCORES = frozenset((names.NODE_RESOURCES_FIT, names.BALANCED_ALLOCATION, binpack.NAME))


@dataclass
class _Template:
    gen: npt.NDArray[np.int64]  # per slot, its generation when last judged
    fixed_ok: npt.NDArray[np.bool_]  # per slot, whether the node's own facts let the pod in
    ok: npt.NDArray[np.bool_]  # per slot, whether the pod fits there
    fixed_score: npt.NDArray[np.int64]  # per slot, the node's facts' part of its score
    score: npt.NDArray[np.int64]  # per slot, its weighted score (where ok)


def _view(state: CycleState, filters: frozenset[str], scores: frozenset[str]) -> CycleState:
    """The cycle state with only these filters and scores left to run."""
    return CycleState(
        state.data,
        state.skip_filter | (NODE_LOCAL_FILTERS - filters),
        state.skip_score | (NODE_LOCAL_SCORES - scores),
    )


def _simple(p: PodInfo) -> bool:
    """Nothing in the pod itself reaches beyond one node."""
    return not (
        p.affinity
        or p.anti_affinity
        or p.preferred_affinity
        or p.preferred_anti_affinity
        or p.spread
        or p.preferred_node_terms
        or p.nominated_node
    )


def _facts(p: PodInfo) -> tuple[Hashable, ...]:
    """What the node-local plugins read of a pod (computed once per parsed pod)."""
    key: tuple[Hashable, ...] | None = p.extra.get("_vtemplate")
    if key is None:
        key = p.extra["_vtemplate"] = (
            tuple(sorted(p.requests.items())), p.nz_cpu, p.nz_mem, p.host_ports, p.node_name,
            tuple(sorted(p.node_selector.items())), p.required_node_terms, p.tolerations, p.images,
        )  # fmt: skip
    return key


class Placer:
    def __init__(self, cache: Cache, framework: Framework) -> None:
        self.cache = cache
        self.framework = framework
        self._templates: dict[Hashable, _Template] = {}
        self._filters = frozenset(p.name for p in framework.filters)
        self._scores = frozenset(p.name for p in framework.scorers)

    def schedule(self, state: CycleState, pod: PodInfo) -> ScheduleResult:
        """A node for `pod` (its cycle state filled by PreFilter and PreScore),
        or FitError as `Framework.schedule` raises it."""
        fw, cache = self.framework, self.cache
        if not _simple(pod) or cache.nominated:
            return fw.schedule(state, pod, cache)
        slots = cache.valid_slots()
        if not fw.run_pre_filter(state, pod, cache).ok:
            return fw.schedule(state, pod, cache)
        fw.run_pre_score(state, pod, cache, slots)
        key = self._key(state, pod)
        if key is None:
            return fw.schedule(state, pod, cache)
        t = self._templates.get(key)
        if t is None or len(t.gen) != cache.n:
            t = self._templates[key] = self._judge(state, pod, slots)
        else:
            self._update(state, pod, t)
        feasible = np.flatnonzero(t.ok)
        if not len(feasible):
            return fw.schedule(state, pod, cache)  # raises FitError, with the reasons
        best = int(feasible[fw.select_host(t.score[feasible])])
        name = cache.slot_names[best]
        assert name is not None
        return ScheduleResult(name, len(slots), len(feasible))

    def _key(self, state: CycleState, pod: PodInfo) -> Hashable | None:
        """The template of a pod whose filters and scores are all node-local, else None."""
        filters = self._filters - state.skip_filter
        scores = self._scores - state.skip_score
        if not filters <= NODE_LOCAL_FILTERS or not scores <= NODE_LOCAL_SCORES:
            return None
        return (_facts(pod), filters, scores)

    def _judge(self, state: CycleState, pod: PodInfo, slots: npt.NDArray[np.intp]) -> _Template:
        fw, cache = self.framework, self.cache
        n = cache.n
        t = _Template(
            cache.slot_gen[:n].copy(), np.zeros(n, bool), np.zeros(n, bool),
            np.zeros(n, np.int64), np.zeros(n, np.int64),
        )  # fmt: skip
        fixed = _view(state, NODE_LOCAL_FILTERS - POD_FILTERS, NODE_LOCAL_SCORES - POD_SCORES)
        fits = fw.run_filters(fixed, pod, cache, slots, None)
        t.fixed_ok[fits] = True
        if len(fits):
            t.fixed_score[fits] = fw.score_only(fixed, pod, cache, fits)[0]
        self._judge_slots(state, pod, t, fits)
        return t

    def _update(self, state: CycleState, pod: PodInfo, t: _Template) -> None:
        cache = self.cache
        now = cache.slot_gen[: cache.n]
        changed = np.flatnonzero(now != t.gen)
        if len(changed):
            t.gen[changed] = now[changed]
            self._judge_slots(state, pod, t, changed[t.fixed_ok[changed]])

    def _judge_slots(
        self, state: CycleState, pod: PodInfo, t: _Template, slots: npt.NDArray[np.intp]
    ) -> None:
        """Judge these slots (the node's facts let the pod in) by the pods on them."""
        fw, cache = self.framework, self.cache
        t.ok[slots] = False
        if not len(slots):
            return
        view = _view(state, POD_FILTERS, POD_SCORES)
        fits = fw.run_filters(view, pod, cache, slots, None)
        t.ok[fits] = True
        if len(fits):
            t.score[fits] = t.fixed_score[fits] + fw.score_only(view, pod, cache, fits)[0]
