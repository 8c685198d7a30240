"""Preemption: fewest, lowest-priority victims; nomination; graceful termination."""

from __future__ import annotations

from tests.fakes.scheduler_objects import make_node, make_pod

from .harness import Env


def pod(
    name: str, prio: int, node: str | None = None, cpu: str = "1", grace: int = 30
) -> dict[str, object]:
    return make_pod(
        name, cpu=cpu, priority=prio, node_name=node, spec={"terminationGracePeriodSeconds": grace}
    )


def setup() -> Env:
    env = Env(nodes=[make_node("a", cpu="2"), make_node("b", cpu="2"), make_node("c", cpu="2")])
    env.add(pod("low1", 1, "a"), pod("low2", 1, "a"))
    env.add(pod("mid1", 50, "b"), pod("mid2", 50, "b"))
    env.add(pod("big-low", 2, "c", cpu="2"))
    return env


def terminating(env: Env) -> set[str]:
    return {k for k, p in env.cluster.pods.items() if p["metadata"].get("deletionTimestamp")}


def test_preempts_fewest_lowest_priority_victims_with_grace() -> None:
    env = setup()
    env.add(pod("high", 100))
    # Node a: one victim of priority 1 (c would need one of priority 2, b two of 50).
    victims = terminating(env)
    assert len(victims) == 1
    victim = victims.pop()
    assert victim in {"default/low1", "default/low2"}
    node = env.cluster.pods["default/high"]["status"]["nominatedNodeName"]
    assert node == env.cluster.pods[victim]["spec"]["nodeName"]
    assert env.node_of("high") is None
    assert "preemption: nominated node" in env.message("high")
    # The victim is still terminating: its resources are still in use.
    env.step(10)
    assert env.node_of("high") is None and victim in env.cluster.pods
    # A lower-priority newcomer does not take the space held for the preemptor.
    env.step(20)  # grace period over: the victim is gone
    assert victim not in env.cluster.pods
    assert env.node_of("high") == node


def test_space_is_held_for_the_nominated_pod() -> None:
    env = setup()
    env.add(pod("high", 100))
    node = env.cluster.pods["default/high"]["status"]["nominatedNodeName"]
    victim = terminating(env).pop()
    # The victim goes away, but the preemptor is still in backoff when a newcomer arrives.
    env.cluster.delete_pod(victim)
    env.cluster.add_pod(pod("sneaky", 0))
    for kind, type_, obj in env.cluster.drain_events():
        env.sched.handle(kind, type_, obj)
    env.sched.schedule_pending()
    assert env.node_of("sneaky") is None
    env.step(30)
    assert env.node_of("high") == node


def test_no_preemption_of_equal_or_higher_priority() -> None:
    env = Env(nodes=[make_node("a", cpu="1")])
    env.add(pod("same", 10, "a"))
    env.add(pod("newcomer", 10))
    assert not terminating(env)
    assert env.node_of("newcomer") is None
    assert "preemption" in env.message("newcomer")


def test_preemption_policy_never() -> None:
    env = Env(nodes=[make_node("a", cpu="1")])
    env.add(pod("low", 1, "a"))
    p = pod("polite", 100)
    p["spec"]["preemptionPolicy"] = "Never"  # type: ignore[index]
    env.add(p)
    assert not terminating(env)


def test_unresolvable_nodes_are_not_candidates() -> None:
    taint = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    env = Env(nodes=[make_node("tainted", cpu="1", taints=taint)])
    env.add(make_pod("low", cpu="1", priority=1, node_name="tainted"))
    env.add(pod("high", 100))
    assert not terminating(env)
    assert "preemption" in env.message("high")
