"""Preemption: fewest, lowest-priority victims; nomination; graceful termination."""

from __future__ import annotations

import pytest

from controlplane.scheduler.plugins.default_preemption import pdb_violations
from controlplane.scheduler.podinfo import PodInfo
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


def budget(name: str, app: str, allowed: int, disrupted: tuple[str, ...] = ()) -> dict[str, object]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": app}}, "minAvailable": 1},
        "status": {
            "disruptionsAllowed": allowed,
            "disruptedPods": {p: "2026-01-01T00:00:00Z" for p in disrupted},
        },
    }


def labelled(name: str, prio: int, node: str, app: str, cpu: str = "2") -> dict[str, object]:
    return make_pod(name, cpu=cpu, priority=prio, node_name=node, labels={"app": app},
                    spec={"terminationGracePeriodSeconds": 30})  # fmt: skip


@pytest.mark.parametrize("protected", ["a", "b"])
def test_the_node_whose_victims_violate_no_budget_is_chosen(protected: str) -> None:
    """Two nodes whose only candidate victims differ only in PDB status: the
    victim whose budget allows a disruption is preempted, whichever node it
    is on (kube-scheduler orders candidates by fewest PDB violations first)."""
    env = Env(nodes=[make_node("a", cpu="2"), make_node("b", cpu="2")])
    env.add(labelled("pod-a", 1, "a", "app-a"), labelled("pod-b", 1, "b", "app-b"))
    free = "b" if protected == "a" else "a"
    env.sched.on_disruption_budget(budget("guard", f"app-{protected}", 0))
    env.sched.on_disruption_budget(budget("loose", f"app-{free}", 1))
    env.add(pod("high", 100, cpu="2"))
    assert terminating(env) == {f"default/pod-{free}"}
    assert env.cluster.pods["default/high"]["status"]["nominatedNodeName"] == free


def test_a_budget_does_not_block_preemption_when_every_node_violates() -> None:
    env = Env(nodes=[make_node("a", cpu="2")])
    env.add(labelled("pod-a", 1, "a", "app-a"))
    env.sched.on_disruption_budget(budget("guard", "app-a", 0))
    env.add(pod("high", 100, cpu="2"))
    assert terminating(env) == {"default/pod-a"}


def test_on_a_node_pods_violating_a_budget_are_reprieved_first() -> None:
    """Without budgets the more important pod (priority 5) is kept and the
    other evicted; with the other (priority 3) protected by a budget with no
    disruption left, it is the one kept."""
    env = Env(nodes=[make_node("a", cpu="2")])
    env.add(labelled("keep-me", 3, "a", "guarded", cpu="1"),
            labelled("important", 5, "a", "free", cpu="1"))  # fmt: skip
    env.sched.on_disruption_budget(budget("guard", "guarded", 0))
    env.add(pod("high", 100, cpu="1"))
    assert terminating(env) == {"default/important"}


def test_pdb_violations_count_down_each_budget_in_order() -> None:
    def info(name: str, app: str, ns: str = "default") -> PodInfo:
        return PodInfo.of(make_pod(name, namespace=ns, labels={"app": app}), {})

    first, second, third = info("p1", "web"), info("p2", "web"), info("p3", "web")
    elsewhere, unlabelled = info("p4", "web", ns="other"), PodInfo.of(make_pod("p5"), {})
    budgets = [budget("b", "web", 1)]
    violating, other = pdb_violations([first, second, third, elsewhere, unlabelled], budgets)
    assert [p.key for p in violating] == ["default/p2", "default/p3"]
    assert [p.key for p in other] == ["default/p1", "other/p4", "default/p5"]
    # A pod already being evicted (in disruptedPods) spends nothing.
    violating, _ = pdb_violations([first, second], [budget("b", "web", 1, disrupted=("p1",))])
    assert violating == []
    # A budget with an empty selector selects nothing.
    empty = budget("e", "web", 0)
    empty["spec"] = {"selector": {}}
    assert pdb_violations([first], [empty]) == ([], [first])
