"""Tasks of one template are judged on every node once per session, then only
where a node's row changed (placement.py): each must still land on a best node
as a full evaluation would rank them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from controlplane.scheduler.batch import conf as batch_conf
from controlplane.scheduler.batch.placement import Placer
from controlplane.scheduler.framework import FitError
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import CycleState
from tests.fakes.scheduler_objects import make_node, make_pod

from .harness import Env

Obj = dict[str, Any]


def _env(nodes: int = 12) -> Env:
    env = Env(batch_conf.DEFAULT_CONF)
    for i in range(nodes):
        cpu, memory = str(2 + i % 4), f"{4 + 2 * (i % 3)}Gi"
        env.sched.cache.on_node(make_node(f"n{i}", cpu=cpu, memory=memory))
    return env


def _task(i: int, cpu: str = "500m", memory: str = "1Gi") -> PodInfo:
    pod = make_pod(f"t-{i}", cpu=cpu, memory=memory, scheduler_name="volcano",
                   labels={"task-index": str(i)})  # fmt: skip
    pod["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "pool", "operator": "NotIn", "values": ["other"]}]}]}}}  # fmt: skip
    return PodInfo.of(pod)


def _best_nodes(env: Env, p: PodInfo) -> set[str]:
    """The nodes a full evaluation (every node filtered and scored) ranks first."""
    fw, cache = env.sched.framework, env.sched.cache.cluster
    state = CycleState()
    assert fw.run_pre_filter(state, p, cache).ok
    fits = fw.run_filters(state, p, cache, cache.valid_slots(), None)
    total, _ = fw.run_scores(state, p, cache, fits)
    return {str(cache.slot_names[int(s)]) for s in fits[total == total.max()]}


class _Counting:
    """Wraps a filter plugin and records how many slots each call judged."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[int] = []

    def filter(self, state: CycleState, pod: PodInfo, cache: Any, slots: Any) -> Any:
        self.calls.append(len(slots))
        return self.inner.filter(state, pod, cache, slots)


def test_each_task_of_a_template_lands_on_a_node_a_full_evaluation_ranks_first() -> None:
    env = _env()
    # Roomy nodes the pod may not use: cordoned, tainted, labelled for others.
    taint = [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]
    env.sched.cache.on_node(make_node("cordoned", cpu="64", unschedulable=True))
    env.sched.cache.on_node(make_node("tainted", cpu="64", taints=taint))
    env.sched.cache.on_node(make_node("other", cpu="64", labels={"pool": "other"}))
    placer = Placer(env.sched.cache.cluster, env.sched.framework)
    for i in range(30):
        p = _task(i)
        best = _best_nodes(env, p)
        node = placer.schedule(CycleState(), p).node
        assert node in best, (i, node, best)
        assert node not in ("cordoned", "tainted", "other")
        env.sched.cache.cluster.assume_pod(p, node)


def test_after_the_first_task_only_changed_nodes_are_judged_again() -> None:
    env = _env()
    fw = env.sched.framework
    counting = _Counting(next(p for p in fw.filters if p.name == "NodeResourcesFit"))
    fw.filters = [counting if p is counting.inner else p for p in fw.filters]
    placer = Placer(env.sched.cache.cluster, fw)
    node = ""
    for i in range(5):
        p = _task(i)
        node = placer.schedule(CycleState(), p).node
        env.sched.cache.cluster.assume_pod(p, node)
    assert counting.calls == [12, 1, 1, 1, 1]
    # A pod placed outside the placer (another template's) is seen as well.
    other = _task(99, cpu="3")
    env.sched.cache.cluster.assume_pod(other, "n3")
    placer.schedule(CycleState(), _task(5))
    assert counting.calls[-1] == len({node, "n3"}) and len(counting.calls) == 6


def test_a_pod_whose_fit_depends_on_other_nodes_takes_the_full_path() -> None:
    env = _env(4)
    placer = Placer(env.sched.cache.cluster, env.sched.framework)
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname",
    }]}}  # fmt: skip
    nodes = set()
    for i in range(4):
        pod = make_pod(f"a-{i}", cpu="100m", scheduler_name="volcano", labels={"app": "x"})
        pod["spec"]["affinity"] = anti
        p = PodInfo.of(pod)
        node = placer.schedule(CycleState(), p).node
        env.sched.cache.cluster.assume_pod(p, node)
        nodes.add(node)
    assert len(nodes) == 4  # one per node, as the anti-affinity asks
    pod = make_pod("a-4", cpu="100m", scheduler_name="volcano", labels={"app": "x"})
    pod["spec"]["affinity"] = anti
    with pytest.raises(FitError, match="anti-affinity"):
        placer.schedule(CycleState(), PodInfo.of(pod))


def test_a_task_that_fits_nowhere_gets_the_frameworks_reasons() -> None:
    env = _env(3)
    placer = Placer(env.sched.cache.cluster, env.sched.framework)
    with pytest.raises(FitError, match="0/3 nodes are available: 3 Insufficient cpu"):
        placer.schedule(CycleState(), _task(0, cpu="64"))
    assert np.all(env.sched.cache.cluster.req[:3, 0] == 0)
