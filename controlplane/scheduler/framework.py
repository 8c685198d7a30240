"""The scheduling framework: running one profile's plugins.

Extension points are kube-scheduler's: QueueSort, PreFilter, Filter,
PostFilter, PreScore, Score (+NormalizeScore, weighted), Reserve/Unreserve,
Permit, PreBind, Bind, PostBind; their Protocols and the values plugins
return live in extension_points.py (re-exported here). A plugin is an
object with a `name` and one method per extension point it implements;
`Framework` sorts the plugins of a profile into those points by the methods
they define.

Filter and Score are *batch* calls: a plugin gets an array of node slots (rows
of the cache's arrays) and answers for all of them at once — a mask plus the
reasons for the rejected ones (`FilterResult`), or an int64 score array. This
is what makes a 5,000-node cluster affordable in Python. A plugin that prefers
to reason about one node at a time subclasses `NodeFilterPlugin` and writes
`filter_node`, returning a `Status`.

Plugins return Status values, never raise for "does not fit". This module does
not pick nodes or bind: `scheduler.py` drives it.

The plugin interface (changed from `SchedulerAware.attach(Scheduler)`):

- A factory is `new(args: dict, handle: Handle) -> plugin`, registered by
  name in `registry.REGISTRY` (names in `names.py`). A plugin that needs more
  than its extension-point arguments keeps the `handle` (handle.py) — the
  cache/snapshot, pod groups, waiting pods, the queue's `activate`, the
  plugins runner (`run_pre_filter`/`run_filters` of the pod's profile), the
  nominator, the evictor and the binder — and never the concrete Scheduler.
- To port a plugin written against `attach`: add the `handle` parameter to
  `new`, store it in `__init__`, and replace `self.scheduler.X` by the
  handle's method (`scheduler.pod_groups.get(k)` -> `handle.pod_group(k)`,
  `scheduler.writer.evict(p, g)` -> `handle.evict(podinfo)`,
  `scheduler.profiles[...].run_filters(...)` -> `handle.run_filters(...)`).
  Storage: `scheduler.volumes` -> `handle.volumes` (read-only, for
  PreFilter/Filter) and `handle.volume_binder` (assume, hold, bind, wait:
  for Reserve/Unreserve/PreBind).
- A PreBind plugin that can tell it has nothing to do for a pod defines
  `pre_bind_pre_flight` returning SKIP; profiles whose PreBind plugins all do
  keep the batched binder for such pods.
- Extension-point method signatures are unchanged.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from controlplane.scheduler.cache import Cache
from controlplane.scheduler.extension_points import (
    MAX_NODE_SCORE,
    BindPlugin,
    Diagnosis,
    EnqueueExtensions,
    FilterPlugin,
    FilterResult,
    NodeFilterPlugin,
    NormalizeScorePlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreBindPreFlightPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    Scores,
    gather,
)
from controlplane.scheduler.handle import Slots
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import SUCCESS, ClusterEvent, Code, CycleState, Status

_INT64_MIN = int(np.iinfo(np.int64).min)  # np.iinfo() builds an object each call

# The extension points are extension_points.py's; their names stay importable here.
__all__ = [
    "MAX_NODE_SCORE",
    "BindPlugin",
    "Diagnosis",
    "EnqueueExtensions",
    "FilterPlugin",
    "FilterResult",
    "NodeFilterPlugin",
    "NormalizeScorePlugin",
    "PermitPlugin",
    "Plugin",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PreBindPlugin",
    "PreBindPreFlightPlugin",
    "PreFilterPlugin",
    "PreScorePlugin",
    "QueueSortPlugin",
    "ReservePlugin",
    "ScorePlugin",
    "Scores",
    "Slots",
    "gather",
]


@dataclass
class ScheduleResult:
    node: str
    evaluated: int
    feasible: int
    breakdown: dict[str, Any] = field(default_factory=dict)


class FitError(Exception):
    """No node fits; carries the diagnosis (the message is kube-scheduler's)."""

    def __init__(self, pod: PodInfo, diagnosis: Diagnosis) -> None:
        self.pod = pod
        self.diagnosis = diagnosis
        super().__init__(diagnosis.message())


def num_feasible_nodes_to_find(num_all: int, percentage: int) -> int:
    """kube-scheduler's numFeasibleNodesToFind: adaptive when percentage is 0."""
    min_feasible = 100
    if num_all < min_feasible or percentage >= 100:
        return num_all
    adaptive = percentage
    if adaptive <= 0:
        adaptive = max(50 - num_all // 125, 5)
    num = num_all * adaptive // 100
    return max(num, min_feasible)


@dataclass
class ProfilePlugin:
    plugin: Any
    weight: int = 1


class Framework:
    """One profile: its plugins sorted into extension points, and how to run them."""

    def __init__(
        self,
        scheduler_name: str,
        plugins: Sequence[ProfilePlugin],
        percentage_of_nodes_to_score: int = 0,
        rng: random.Random | None = None,
        record_breakdown: bool = True,
    ) -> None:
        self.scheduler_name = scheduler_name
        self.plugins = [p.plugin for p in plugins]
        self.weights = {p.plugin.name: p.weight for p in plugins}
        self.percentage = percentage_of_nodes_to_score
        self.rng = rng or random.Random(0)
        self.record_breakdown = record_breakdown
        ps = self.plugins
        sorters = [p for p in ps if isinstance(p, QueueSortPlugin)]
        self.queue_sort: QueueSortPlugin | None = sorters[0] if sorters else None
        self.pre_filters = [p for p in ps if isinstance(p, PreFilterPlugin)]
        self.filters = [p for p in ps if isinstance(p, FilterPlugin)]
        self.post_filters = [p for p in ps if isinstance(p, PostFilterPlugin)]
        self.pre_scores = [p for p in ps if isinstance(p, PreScorePlugin)]
        self.scorers = [p for p in ps if isinstance(p, ScorePlugin)]
        self.reservers = [p for p in ps if isinstance(p, ReservePlugin)]
        self.permits = [p for p in ps if isinstance(p, PermitPlugin)]
        self.pre_binds = [p for p in ps if isinstance(p, PreBindPlugin)]
        # Each PreBind plugin's pre-flight, or None (checked once: isinstance of a
        # runtime Protocol costs tens of microseconds, too much per bind).
        self._pre_flights: list[PreBindPreFlightPlugin | None] = [
            p if isinstance(p, PreBindPreFlightPlugin) else None for p in self.pre_binds
        ]
        self.binders = [p for p in ps if isinstance(p, BindPlugin)]
        self.post_binds = [p for p in ps if isinstance(p, PostBindPlugin)]
        self.normalizers = {p.name: p for p in ps if isinstance(p, NormalizeScorePlugin)}
        self.next_start = 0
        self.feasible_ratio = 1.0  # moving average: share of visited nodes that fit

    def plugin(self, name: str) -> Any:
        for p in self.plugins:
            if p.name == name:
                return p
        return None

    # ---- filtering -------------------------------------------------------

    def run_pre_filter(self, state: CycleState, pod: PodInfo, cache: Cache) -> Status:
        for p in self.pre_filters:
            st = p.pre_filter(state, pod, cache)
            if st.code == Code.SKIP:
                state.skip_filter.add(p.name)
            elif not st.ok:
                return st.with_plugin(p.name)
        return SUCCESS

    def run_filters(
        self,
        state: CycleState,
        pod: PodInfo,
        cache: Cache,
        slots: Slots,
        diagnosis: Diagnosis | None,
    ) -> Slots:
        """The slots that pass every filter; rejections are noted in `diagnosis`."""
        for p in self.filters:
            if p.name in state.skip_filter or len(slots) == 0:
                continue
            res = p.filter(state, pod, cache, slots)
            if res.ok.all():
                continue
            if diagnosis is not None:
                diagnosis.unschedulable_plugins.add(p.name)
                for reason, mask, code in res.reasons:
                    diagnosis.failures.append((p.name, reason, slots[mask & ~res.ok], code))
            slots = slots[res.ok]
        return slots

    def find_feasible(
        self, state: CycleState, pod: PodInfo, cache: Cache
    ) -> tuple[Slots, Diagnosis, int]:
        """Filter all nodes, then keep numFeasibleNodesToFind of them from a rotating start.

        Returns the feasible slots (in visiting order), the diagnosis and how many
        nodes were "processed" (what the start index advances by).
        """
        all_slots = cache.valid_slots()
        n = len(all_slots)
        diag = Diagnosis(num_nodes=n, cache=cache)
        st = self.run_pre_filter(state, pod, cache)
        if not st.ok:
            diag.pre_filter = st
            diag.unschedulable_plugins.add(st.plugin)
            return all_slots[:0], diag, 0
        if n == 0:
            return all_slots, diag, 0
        # A nominated node (from an earlier preemption) is tried first, alone.
        if pod.nominated_node and pod.nominated_node in cache.nodes:
            slot = np.array([cache.nodes[pod.nominated_node].slot], np.intp)
            ok = self.run_filters(state, pod, cache, slot, None)
            if len(ok):
                return ok, diag, 0
        want = num_feasible_nodes_to_find(n, self.percentage)
        start = self.next_start % n
        if want >= n:
            feasible = self.run_filters(state, pod, cache, all_slots, diag)
            split = int(np.searchsorted(cache.slot_positions()[feasible], start))
            return np.concatenate((feasible[split:], feasible[:split])), diag, n
        # Visit nodes from `start` in a window a little larger than needed; only
        # if too few fit there, visit the rest. Filters keep the visiting order.
        # The window is sized by the share of nodes that fitted last time.
        window = min(n, int(want / max(self.feasible_ratio, 0.02) * 1.25) + 64)
        order = np.arange(start, start + window) % n
        feasible = self.run_filters(state, pod, cache, all_slots[order], diag)
        visited = window
        if len(feasible) < want and window < n:
            rest = np.arange(start + window, start + n) % n
            more = self.run_filters(state, pod, cache, all_slots[rest], diag)
            feasible = np.concatenate((feasible, more))
            visited = n
        self.feasible_ratio = 0.8 * self.feasible_ratio + 0.2 * (len(feasible) / visited)
        if len(feasible) <= want:
            return feasible, diag, n
        chosen = feasible[:want]
        last = int(cache.slot_positions()[chosen[-1]])
        processed = (last - start) % n + 1
        return chosen, diag, processed

    # ---- scoring -----------------------------------------------------------

    def run_scores(
        self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots
    ) -> tuple[Scores, dict[str, Scores]]:
        self.run_pre_score(state, pod, cache, slots)
        return self.score_only(state, pod, cache, slots)

    def run_pre_score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> None:
        for pre in self.pre_scores:
            st = pre.pre_score(state, pod, cache, slots)
            if st.code == Code.SKIP:
                state.skip_score.add(pre.name)

    def score_only(
        self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots
    ) -> tuple[Scores, dict[str, Scores]]:
        """The weighted scores (and each plugin's) of a cycle whose PreScore ran."""
        total = np.zeros(len(slots), np.int64)
        parts: dict[str, Scores] = {}
        for sp in self.scorers:
            if sp.name in state.skip_score:
                continue
            s = sp.score(state, pod, cache, slots)
            norm = self.normalizers.get(sp.name)
            if norm is not None:
                s = norm.normalize_score(state, pod, s)
            total += s * self.weights.get(sp.name, 1)
            parts[sp.name] = s
        return total, parts

    def select_host(self, total: Scores) -> int:
        """Index of the best score; ties broken at random, as kube-scheduler does."""
        best = total.max()
        ties = np.flatnonzero(total == best)
        if len(ties) == 1:
            return int(ties[0])
        return int(ties[self.rng.randrange(len(ties))])

    def schedule(self, state: CycleState, pod: PodInfo, cache: Cache) -> ScheduleResult:
        """Filter, score and pick a node for `pod`, or raise FitError."""
        feasible, diag, processed = self.find_feasible(state, pod, cache)
        n = diag.num_nodes
        if n:
            self.next_start = (self.next_start + processed) % n
        if len(feasible) == 0:
            raise FitError(pod, diag)
        if len(feasible) == 1:
            name = cache.slot_names[int(feasible[0])]
            assert name is not None
            breakdown: dict[str, Any] = {
                "nodes": [{"node": name, "total": 0, "plugins": {}}],
                "feasible": 1,
            }
            return ScheduleResult(name, processed, 1, breakdown if self.record_breakdown else {})
        total, parts = self.run_scores(state, pod, cache, feasible)
        i = self.select_host(total)
        name = cache.slot_names[int(feasible[i])]
        assert name is not None
        result = ScheduleResult(name, processed, len(feasible))
        if self.record_breakdown:
            result.breakdown = self._breakdown(cache, feasible, total, parts, i)
        return result

    def _breakdown(
        self, cache: Cache, slots: Slots, total: Scores, parts: dict[str, Scores], chosen: int
    ) -> dict[str, Any]:
        """Per-plugin scores of the chosen node and of the runner-up."""
        rest = total.copy()
        rest[chosen] = _INT64_MIN
        runner = int(rest.argmax())

        def node(j: int) -> dict[str, Any]:
            return {
                "node": cache.slot_names[int(slots[j])],
                "total": int(total[j]),
                "plugins": {
                    name: {"score": int(s[j]), "weight": self.weights.get(name, 1)}
                    for name, s in parts.items()
                },
            }

        return {"nodes": [node(chosen), node(runner)], "feasible": len(slots)}

    # ---- after a node is chosen ------------------------------------------

    def run_reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        for i, p in enumerate(self.reservers):
            st = p.reserve(state, pod, node)
            if not st.ok:
                for q in reversed(self.reservers[: i + 1]):
                    q.unreserve(state, pod, node)
                return st.with_plugin(p.name)
        return SUCCESS

    def run_unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        for p in reversed(self.reservers):
            p.unreserve(state, pod, node)

    def run_permit(self, state: CycleState, pod: PodInfo, node: str) -> tuple[Status, float]:
        """SUCCESS, a rejection, or WAIT with the shortest timeout any plugin asked."""
        wait: float | None = None
        for p in self.permits:
            st, timeout = p.permit(state, pod, node)
            if st.code == Code.WAIT:
                wait = timeout if wait is None else min(wait, timeout)
            elif not st.ok:
                return st.with_plugin(p.name), 0.0
        if wait is not None:
            return Status(Code.WAIT), wait
        return SUCCESS, 0.0

    def run_pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        for p in self.pre_binds:
            st = p.pre_bind(state, pod, node)
            if not st.ok:
                return st.with_plugin(p.name)
        return SUCCESS

    def pre_binds_skippable(self) -> bool:
        """Whether every PreBind plugin can say beforehand that it has nothing to do."""
        return all(p is not None for p in self._pre_flights)

    def pre_bind_has_work(self, state: CycleState, pod: PodInfo, node: str) -> bool:
        """Whether some PreBind plugin has work for this pod (True unless all say SKIP)."""
        for p in self._pre_flights:
            if p is None or p.pre_bind_pre_flight(state, pod, node).code != Code.SKIP:
                return True
        return False

    def run_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        for p in self.binders:
            st = p.bind(state, pod, node)
            if st.code != Code.SKIP:
                return st.with_plugin(p.name)
        return Status(Code.ERROR, ("no bind plugin bound the pod",))

    def run_post_bind(self, state: CycleState, pod: PodInfo, node: str) -> None:
        for p in self.post_binds:
            p.post_bind(state, pod, node)

    def run_post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[Status, str]:
        reasons: list[str] = []
        for p in self.post_filters:
            st, nominated = p.post_filter(state, pod, diagnosis)
            if st.ok:
                return st, nominated
            reasons.extend(st.reasons)
        return Status(Code.UNSCHEDULABLE, tuple(reasons)), ""

    def events(self) -> dict[str, list[ClusterEvent]]:
        return {
            p.name: list(p.events_to_register())
            for p in self.plugins
            if isinstance(p, EnqueueExtensions)
        }
