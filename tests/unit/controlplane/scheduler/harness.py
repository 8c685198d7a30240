"""Helpers for scheduler unit tests: a cache built from nodes and pods, a driven scheduler."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from controlplane.scheduler import config
from controlplane.scheduler.cache import Cache
from controlplane.scheduler.framework import Slots
from controlplane.scheduler.handle import Handle
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.scheduler import Scheduler, from_config
from controlplane.scheduler.types import CycleState
from machinery.clock import FakeClock
from tests.fakes.scheduler_cluster import InMemoryCluster

Obj = dict[str, Any]


def plugin_handle() -> Handle:
    """A scheduler's plugin handle, for building a plugin alone with its factory."""
    return from_config(config.parse(None), InMemoryCluster()).plugin_handle


def cache_of(nodes: Sequence[Obj], pods: Sequence[Obj] = ()) -> Cache:
    cache = Cache(FakeClock())
    for n in nodes:
        cache.add_node(n)
    for p in pods:
        cache.add_pod(PodInfo.of(p))
    return cache


def run_filter(
    plugin: Any, pod: Obj, nodes: Sequence[Obj], pods: Sequence[Obj] = ()
) -> dict[str, tuple[str, ...]]:
    """Node name -> reasons it was rejected; () for nodes that pass."""
    cache = cache_of(nodes, pods)
    p = PodInfo.of(pod)
    state = CycleState()
    slots: Slots = cache.valid_slots()
    names = [cache.slot_names[int(s)] for s in slots]
    if hasattr(plugin, "pre_filter"):
        st = plugin.pre_filter(state, p, cache)
        if st.code.name == "SKIP":
            return {n: () for n in names if n}
        if not st.ok:
            return {n: st.reasons for n in names if n}
    res = plugin.filter(state, p, cache, slots)
    out: dict[str, tuple[str, ...]] = {}
    for i, n in enumerate(names):
        assert n is not None
        out[n] = tuple(r for r, mask, _ in res.reasons if mask[i]) if not res.ok[i] else ()
        assert res.ok[i] == (out[n] == ()), (n, res.ok[i], out[n])
    return out


def run_score(
    plugin: Any, pod: Obj, nodes: Sequence[Obj], pods: Sequence[Obj] = ()
) -> dict[str, int]:
    """Node name -> score (normalised when the plugin normalises)."""
    cache = cache_of(nodes, pods)
    p = PodInfo.of(pod)
    state = CycleState()
    slots = cache.valid_slots()
    if hasattr(plugin, "pre_score"):
        st = plugin.pre_score(state, p, cache, slots)
        if st.code.name == "SKIP":
            return {cache.slot_names[int(s)] or "": 0 for s in slots}
    scores = plugin.score(state, p, cache, slots)
    if hasattr(plugin, "normalize_score"):
        scores = plugin.normalize_score(state, p, scores)
    assert scores.dtype == np.int64
    return {cache.slot_names[int(s)] or "": int(v) for s, v in zip(slots, scores, strict=True)}


class Env:
    """A scheduler over an in-memory cluster with a fake clock, driven by hand."""

    def __init__(self, cfg: Obj | None = None, nodes: Sequence[Obj] = ()) -> None:
        self.clock = FakeClock()
        self.cluster = InMemoryCluster(self.clock)
        self.sched: Scheduler = from_config(config.parse(cfg), self.cluster, clock=self.clock)
        for n in nodes:
            self.cluster.add_node(n)
        self.pump()

    def add(self, *pods: Obj) -> None:
        for p in pods:
            self.cluster.add_pod(p)
        self.pump()

    def pump(self, rounds: int = 20) -> None:
        """Deliver cluster events and schedule until nothing changes."""
        for _ in range(rounds):
            self.cluster.advance()
            events = self.cluster.drain_events()
            for kind, type_, obj in events:
                self.sched.handle(kind, type_, obj)
            tried = self.sched.schedule_pending()
            if not events and not tried:
                return

    def step(self, seconds: float) -> None:
        self.clock.step(seconds)
        self.pump()

    def node_of(self, name: str, namespace: str = "default") -> str | None:
        pod = self.cluster.pods.get(f"{namespace}/{name}")
        return None if pod is None else (pod.get("spec") or {}).get("nodeName")

    def message(self, name: str, namespace: str = "default") -> str:
        d = self.sched.explain(f"{namespace}/{name}")
        return d.message if d else ""
