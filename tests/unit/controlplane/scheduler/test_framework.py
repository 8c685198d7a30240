"""The framework's extension points with out-of-tree plugins registered by name."""

from __future__ import annotations

import json
from typing import Any

from controlplane.scheduler import config
from controlplane.scheduler.cache import NodeInfo
from controlplane.scheduler.framework import NodeFilterPlugin
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.registry import REGISTRY, Factory
from controlplane.scheduler.scheduler import SCORES_ANNOTATION, from_config
from controlplane.scheduler.types import ANY_EVENT, SUCCESS, CycleState, Status, unschedulable
from tests.fakes.scheduler_cluster import InMemoryCluster
from tests.fakes.scheduler_objects import make_node, make_pod

from .harness import Env


class OddNodesOnly(NodeFilterPlugin):
    """A one-node-at-a-time filter: only nodes whose name ends in an odd digit."""

    name = "OddNodesOnly"

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if int(node.name[-1]) % 2:
            return SUCCESS
        return unschedulable("node(s) are even")


class Gate:
    """Reserve and Permit that a test controls."""

    name = "Gate"

    def __init__(self) -> None:
        self.permit_answer: Status = SUCCESS
        self.reserved: list[str] = []
        self.unreserved: list[str] = []

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        self.reserved.append(pod.name)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        self.unreserved.append(pod.name)

    def permit(self, state: CycleState, pod: PodInfo, node: str) -> tuple[Status, float]:
        return self.permit_answer, 0.0


def _factory(plugin: Any) -> Factory:
    return lambda args, handle: plugin


def env_with(plugins: dict[str, Any], names: list[str]) -> tuple[Env, InMemoryCluster]:
    """An Env whose only profile runs `names`, found in a registry extended with `plugins`."""
    registry = dict(REGISTRY)
    registry.update({n: _factory(p) for n, p in plugins.items()})
    cfg = config.parse(
        {"profiles": [{"plugins": ["PrioritySort", *names, "NodeResourcesFit", "DefaultBinder"]}]},
        registry,
    )
    env = Env()
    env.sched = from_config(cfg, env.cluster, clock=env.clock, registry=registry)
    return env, env.cluster


def test_per_node_filter_plugin_and_reasons() -> None:
    env, cluster = env_with({"OddNodesOnly": OddNodesOnly()}, ["OddNodesOnly"])
    for i in range(4):
        cluster.add_node(make_node(f"n{i}"))
    env.add(make_pod("p"))
    assert env.node_of("p") in {"n1", "n3"}
    env.add(make_pod("huge", cpu="100"))
    assert env.message("huge") == "0/4 nodes are available: 2 Insufficient cpu, 2 node(s) are even."


def test_permit_denial_unreserves_and_requeues() -> None:
    gate = Gate()
    env, cluster = env_with({"Gate": gate}, ["Gate"])
    cluster.add_node(make_node("n1"))
    gate.permit_answer = unschedulable("not today")
    env.add(make_pod("p"))
    assert env.node_of("p") is None
    assert gate.reserved == ["p"] and gate.unreserved == ["p"]
    assert env.sched.cache.node_of("default/p") is None
    assert env.message("p") == "not today"
    gate.permit_answer = SUCCESS
    env.sched.queue.move_on_event(ANY_EVENT)
    env.step(1.0)
    assert env.node_of("p") == "n1"


def test_scores_annotation_written_with_the_bind() -> None:
    env = Env(nodes=[make_node("a", cpu="2"), make_node("b", cpu="4")])
    env.add(make_pod("p", cpu="1"))
    ann = env.cluster.pods["default/p"]["metadata"]["annotations"][SCORES_ANNOTATION]
    scores = json.loads(ann)
    assert scores["chosen"]["node"] == "b" and scores["runnerUp"]["node"] == "a"
    assert scores["feasibleNodes"] == 2


def test_status_only_update_does_not_requeue_pending_pod() -> None:
    env = Env(nodes=[make_node("n", cpu="1")])
    env.add(make_pod("big", cpu="2"))
    assert "default/big" in env.sched.queue.pending()["unschedulable"]
    old = env.cluster.pods["default/big"]
    new = dict(
        old,
        status={"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]},
    )
    env.sched.on_pod_update(new, old)
    assert "default/big" in env.sched.queue.pending()["unschedulable"]
    relabelled = dict(old, metadata=dict(old["metadata"], labels={"x": "y"}))
    env.sched.on_pod_update(relabelled, old)
    assert "default/big" not in env.sched.queue.pending()["unschedulable"]


def test_status_write_of_a_bound_pod_keeps_its_accounting() -> None:
    env = Env(nodes=[make_node("n", cpu="4")])
    env.add(make_pod("p", cpu="1"))
    bound = env.cluster.pods["default/p"]
    env.sched.on_pod_update(bound, make_pod("p", cpu="1"))  # the bind confirmed
    cpu = int(env.sched.cache.req[env.sched.cache.nodes["n"].slot, 0])
    running = dict(bound, status={"phase": "Running"})
    env.sched.on_pod_update(running, bound)
    info = env.sched.cache.nodes["n"]
    assert info.pods["default/p"].pod is running
    assert int(env.sched.cache.req[info.slot, 0]) == cpu
    # A change the cache counts (more cpu) still goes the long way.
    bigger = make_pod("p", cpu="2")
    bigger["spec"]["nodeName"] = "n"
    env.sched.on_pod_update(bigger, running)
    assert int(env.sched.cache.req[info.slot, 0]) == cpu + 1000


def test_drf_queue_takes_the_poorer_namespace_first() -> None:
    env = Env({"queue": {"order": "DRF"}}, nodes=[make_node("n", cpu="4", memory="8Gi")])
    env.add(make_pod("rich-0", cpu="2", namespace="rich"))
    for i in range(2):
        env.cluster.add_pod(make_pod(f"rich-{i + 1}", cpu="1", namespace="rich", priority=10))
        env.cluster.add_pod(make_pod(f"poor-{i}", cpu="1", namespace="poor"))
    for kind, type_, obj in env.cluster.drain_events():
        env.sched.handle(kind, type_, obj)
    env.sched.schedule_pending()
    # 2 cpu were left: DRF gave them to "poor" although "rich" pods have higher priority.
    assert env.node_of("poor-0", "poor") == "n" and env.node_of("poor-1", "poor") == "n"
    assert env.node_of("rich-1", "rich") is None and env.node_of("rich-2", "rich") is None


class Broken:
    """A filter plugin with a bug."""

    name = "Broken"

    def __init__(self) -> None:
        self.fail = True

    def filter(self, state: CycleState, pod: PodInfo, cache: Any, slots: Any) -> Any:
        if self.fail:
            raise RuntimeError("plugin bug")
        from controlplane.scheduler.framework import FilterResult

        return FilterResult.all_pass(len(slots))


def test_a_raising_plugin_does_not_stop_the_scheduler() -> None:
    broken = Broken()
    env, cluster = env_with({"Broken": broken}, ["Broken"])
    cluster.add_node(make_node("n1"))
    env.add(make_pod("p"))
    assert env.node_of("p") is None
    assert "internal error" in env.message("p")
    broken.fail = False
    env.step(1.0)
    assert env.node_of("p") == "n1"


def test_score_annotation_can_be_turned_off() -> None:
    env = Env({"scoreAnnotation": False}, nodes=[make_node("a", cpu="2"), make_node("b", cpu="4")])
    env.add(make_pod("p", cpu="1"))
    assert env.node_of("p") == "b"
    assert SCORES_ANNOTATION not in (
        env.cluster.pods["default/p"]["metadata"].get("annotations") or {}
    )
    d = env.sched.explain("default/p")
    assert d is not None and d.breakdown["nodes"][0]["node"] == "b"  # still kept in memory


def test_describe_scheduling_lines() -> None:
    from controlplane.scheduler.explain import describe_scheduling

    env = Env(nodes=[make_node("a", cpu="2"), make_node("b", cpu="4")])
    env.add(make_pod("p", cpu="1"), make_pod("big", cpu="8"))
    lines = describe_scheduling(env.cluster.pods["default/p"])
    assert lines[0].startswith("Scheduled on b (feasible nodes scored: 2)")
    assert any(line.strip().startswith("NodeResourcesFit") for line in lines)
    assert lines[-1].strip().startswith("total")
    pending = dict(env.cluster.pods["default/big"])
    pending["status"] = {
        "conditions": [{"type": "PodScheduled", "status": "False", "message": env.message("big")}]
    }
    assert describe_scheduling(pending)[0].startswith(
        "Unschedulable: 0/2 nodes are available: 2 Insufficient cpu."
    )
