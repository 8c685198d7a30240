"""NodeAffinity: spec.nodeSelector and nodeAffinity, required (filter) and preferred (score).

Label requirements (In, NotIn, Exists, DoesNotExist, Gt, Lt) are evaluated
over the cache's per-label code arrays, so a term costs a few vector ops for
all nodes. Terms are ORed, expressions in a term ANDed, an empty term matches
nothing; `matchFields` supports metadata.name. The preferred score is the sum
of matching terms' weights, normalised so the best node gets 100.
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
from controlplane.scheduler.podinfo import NodeSelectorTerm, PodInfo, Requirement
from controlplane.scheduler.types import (
    NODE_ADD,
    NODE_UPDATE,
    ClusterEvent,
    Code,
    CycleState,
    Status,
    relevant,
)

NAME = names.NODE_AFFINITY
REASON = "node(s) didn't match Pod's node affinity/selector"
Mask = npt.NDArray[np.bool_]


def _numeric(cache: Cache, key: str) -> npt.NDArray[np.float64]:
    values = cache.label_values.get(key, [])
    out = np.full(len(values) + 1, np.nan)  # last entry: "no label" (-1)
    for i, v in enumerate(values):
        try:
            out[i] = int(v)
        except ValueError:
            pass
    return out


def _lookup(cache: Cache, key: str, table: npt.NDArray[np.bool_], slots: Slots) -> Mask:
    """table[code of the node's value]; the table's last entry answers "no such label"."""
    out: Mask = table[cache.codes(key)[slots]]
    return out


def requirement_mask(cache: Cache, r: Requirement, slots: Slots) -> Mask:
    vocab = len(cache.label_values.get(r.key, ())) if r.key in cache.label_values else 0
    if r.op in ("In", "NotIn"):
        table = np.zeros(vocab + 1, bool)
        for v in r.values:
            code = cache.label_code(r.key, v)
            if code >= 0:
                table[code] = True
        if r.op == "NotIn":
            table = ~table
        return _lookup(cache, r.key, table, slots)
    if r.op == "Exists":
        return cache.codes(r.key)[slots] >= 0
    if r.op == "DoesNotExist":
        return cache.codes(r.key)[slots] < 0
    if r.op in ("Gt", "Lt") and len(r.values) == 1:
        try:
            bound = int(next(iter(r.values)))
        except ValueError:
            return np.zeros(len(slots), bool)
        vals = _numeric(cache, r.key)
        with np.errstate(invalid="ignore"):
            table = vals > bound if r.op == "Gt" else vals < bound
        return _lookup(cache, r.key, table, slots)
    return np.zeros(len(slots), bool)


def term_mask(cache: Cache, term: NodeSelectorTerm, slots: Slots) -> Mask:
    """Whether each slot matches `term` (memoised over all slots until labels change)."""
    full: Mask = cache.node_memo(
        ("term", term), lambda: _term_mask(cache, term, np.arange(cache.n))
    )
    return full if len(slots) == cache.n else full[slots]


def _term_mask(cache: Cache, term: NodeSelectorTerm, slots: Slots) -> Mask:
    if not term.expressions and not term.fields:
        return np.zeros(len(slots), bool)
    m = np.ones(len(slots), bool)
    for r in term.expressions:
        m &= requirement_mask(cache, r, slots)
    for r in term.fields:
        if r.key != "metadata.name" or r.op not in ("In", "NotIn"):
            return np.zeros(len(slots), bool)
        named = [cache.nodes[v].slot for v in r.values if v in cache.nodes]
        hit = np.isin(slots, named)
        m &= hit if r.op == "In" else ~hit
    return m


def required_mask(cache: Cache, pod: PodInfo, slots: Slots) -> Mask:
    """Nodes matching the pod's nodeSelector and required node affinity."""
    key = ("required", tuple(sorted(pod.node_selector.items())), pod.required_node_terms)
    full: Mask = cache.node_memo(key, lambda: _required_mask(cache, pod, np.arange(cache.n)))
    return full if len(slots) == cache.n else full[slots]


def _required_mask(cache: Cache, pod: PodInfo, slots: Slots) -> Mask:
    m = np.ones(len(slots), bool)
    for key, val in pod.node_selector.items():
        code = cache.label_code(key, val)
        if code < 0:
            return np.zeros(len(slots), bool)
        m &= cache.codes(key)[slots] == code
    if pod.required_node_terms is not None:
        any_term = np.zeros(len(slots), bool)
        for term in pod.required_node_terms:
            any_term |= _term_mask(cache, term, slots)
        m &= any_term
    return m


class NodeAffinity:
    name = NAME

    def pre_filter(self, state: CycleState, pod: PodInfo, cache: Cache) -> Status:
        return relevant(pod.node_selector or pod.required_node_terms is not None)

    def filter(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> FilterResult:
        return FilterResult.reject(
            ~required_mask(cache, pod, slots), REASON, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        )

    def pre_score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Status:
        return relevant(pod.preferred_node_terms)

    def score(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> Scores:
        total = np.zeros(len(slots), np.int64)
        for weight, term in pod.preferred_node_terms:
            if weight:
                total += np.where(term_mask(cache, term, slots), weight, 0)
        return total

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: Scores) -> Scores:
        return default_normalize(scores, reverse=False)

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return [NODE_ADD, NODE_UPDATE]


def default_normalize(scores: Scores, reverse: bool) -> Scores:
    """kube-scheduler's DefaultNormalizeScore: scale so the maximum is 100."""
    top = int(scores.max()) if len(scores) else 0
    if top == 0:
        return np.full(len(scores), MAX_NODE_SCORE if reverse else 0, np.int64)
    out = MAX_NODE_SCORE * scores // top
    return (MAX_NODE_SCORE - out) if reverse else out


def new(args: dict[str, Any], handle: NodeHandle) -> NodeAffinity:
    return NodeAffinity()
