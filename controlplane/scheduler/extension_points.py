"""The scheduling framework's extension points, as plugins see them.

One Protocol per extension point (kube-scheduler's: QueueSort, PreFilter,
Filter, PostFilter, PreScore, Score (+NormalizeScore), Reserve/Unreserve,
Permit, PreBind (+pre-flight), Bind, PostBind, and EnqueueExtensions), the
batch answers Filter and Score give (`FilterResult`, `Scores` over node
slots), and `NodeFilterPlugin` for a plugin that reasons about one node at
a time; `Diagnosis`, what PostFilter learns of a pod that fits nowhere.
`framework.Framework` sorts a profile's plugins into these points
and runs them; this module runs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from controlplane.scheduler.cache import Cache, NodeInfo
from controlplane.scheduler.handle import Slots
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import ClusterEvent, Code, CycleState, Status

Scores = npt.NDArray[np.int64]
MAX_NODE_SCORE = 100


@dataclass
class FilterResult:
    """Which of the given slots pass, and why the others do not."""

    ok: npt.NDArray[np.bool_]
    # (reason, mask over the given slots, code) for each kind of rejection.
    reasons: list[tuple[str, npt.NDArray[np.bool_], Code]] = field(default_factory=list)

    @classmethod
    def all_pass(cls, n: int) -> FilterResult:
        return cls(np.ones(n, bool))

    @classmethod
    def reject(
        cls, bad: npt.NDArray[np.bool_], reason: str, code: Code = Code.UNSCHEDULABLE
    ) -> FilterResult:
        return cls(~bad, [(reason, bad, code)] if bad.any() else [])


class Plugin(Protocol):
    name: str


@runtime_checkable
class QueueSortPlugin(Protocol):
    name: str

    def sort_key(self, pod: PodInfo, added: float) -> tuple[Any, ...]: ...


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(self, state: CycleState, pod: PodInfo, cache: Cache) -> Status: ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(
        self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots
    ) -> FilterResult: ...


@runtime_checkable
class PostFilterPlugin(Protocol):
    name: str

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[Status, str]: ...


@runtime_checkable
class PreScorePlugin(Protocol):
    name: str

    def pre_score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Status: ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Scores: ...


@runtime_checkable
class NormalizeScorePlugin(Protocol):
    name: str

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: Scores) -> Scores: ...


@runtime_checkable
class ReservePlugin(Protocol):
    name: str

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None: ...


@runtime_checkable
class PermitPlugin(Protocol):
    name: str

    def permit(self, state: CycleState, pod: PodInfo, node: str) -> tuple[Status, float]: ...


@runtime_checkable
class PreBindPlugin(Protocol):
    name: str

    def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...


@runtime_checkable
class PreBindPreFlightPlugin(Protocol):
    """A PreBind plugin that can tell beforehand it has nothing to do (kube-scheduler's
    PreBindPreFlight): SKIP means its PreBind would do nothing for this pod."""

    name: str

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...


@runtime_checkable
class BindPlugin(Protocol):
    name: str

    def bind(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...


@runtime_checkable
class PostBindPlugin(Protocol):
    name: str

    def post_bind(self, state: CycleState, pod: PodInfo, node: str) -> None: ...


@runtime_checkable
class EnqueueExtensions(Protocol):
    name: str

    def events_to_register(self) -> Sequence[ClusterEvent]: ...


def gather(state: CycleState, cache: Cache, array: str, col: int, slots: Slots) -> npt.NDArray[Any]:
    """`getattr(cache, array)[slots, col]`, fetched once per cycle and shared by score plugins."""
    memo: dict[tuple[str, int], npt.NDArray[Any]] | None = state.data.get("_gather")
    if memo is None or state.data.get("_gather_slots") is not slots:
        memo = state.data["_gather"] = {}
        state.data["_gather_slots"] = slots
    key = (array, col)
    out = memo.get(key)
    if out is None:
        out = memo[key] = getattr(cache, array)[slots, col]
    return out


class NodeFilterPlugin:
    """Base for a plugin that filters one node at a time (slower, simpler)."""

    name = "NodeFilter"

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        raise NotImplementedError

    def filter(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> FilterResult:
        ok = np.ones(len(slots), bool)
        by_reason: dict[tuple[str, Code], npt.NDArray[np.bool_]] = {}
        for i, slot in enumerate(slots):
            name = cache.slot_names[int(slot)]
            assert name is not None
            st = self.filter_node(state, pod, cache.nodes[name])
            if not st.ok:
                ok[i] = False
                for reason in st.reasons or ("rejected by " + self.name,):
                    mask = by_reason.setdefault((reason, st.code), np.zeros(len(slots), bool))
                    mask[i] = True
        return FilterResult(ok, [(r, m, c) for (r, c), m in by_reason.items()])


@dataclass
class Diagnosis:
    """Why a pod fits nowhere: per plugin, the rejected slots and their reasons."""

    num_nodes: int
    failures: list[tuple[str, str, Slots, Code]] = field(
        default_factory=list
    )  # plugin, reason, slots, code
    pre_filter: Status | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    cache: Cache | None = None

    def reason_counts(self) -> dict[str, int]:
        if self.pre_filter is not None and not self.pre_filter.ok:
            return {r: self.num_nodes for r in self.pre_filter.reasons}
        counts: dict[str, int] = {}
        for _plugin, reason, slots, _code in self.failures:
            counts[reason] = counts.get(reason, 0) + len(slots)
        return counts

    def message(self) -> str:
        """kube-scheduler's FitError text: `0/5 nodes are available: 3 Insufficient cpu, ...`."""
        counts = self.reason_counts()
        parts = sorted(f"{n} {reason}" for reason, n in counts.items())
        text = f"0/{self.num_nodes} nodes are available"
        return text + (": " + ", ".join(parts) + "." if parts else ".")

    def unresolvable_slots(self) -> set[int]:
        out: set[int] = set()
        for _p, _r, slots, code in self.failures:
            if code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                out.update(int(s) for s in slots)
        return out

    def node_statuses(self) -> dict[str, Status]:
        out: dict[str, list[str]] = {}
        codes: dict[str, Code] = {}
        plugins: dict[str, str] = {}
        assert self.cache is not None
        for plugin, reason, slots, code in self.failures:
            for s in slots:
                name = self.cache.slot_names[int(s)]
                if name is None:
                    continue
                out.setdefault(name, []).append(reason)
                codes[name] = max(codes.get(name, code), code)
                plugins[name] = plugin
        return {n: Status(codes[n], tuple(r), plugins[n]) for n, r in out.items()}
