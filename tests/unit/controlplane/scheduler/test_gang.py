"""Gang scheduling: a PodGroup binds minMember pods together or none."""

from __future__ import annotations

from tests.fakes.scheduler_objects import make_node, make_pod

from .harness import Env

GROUP_LABEL = "scheduling.skiff.dev/pod-group"


def group(name: str, min_member: int, timeout: int | None = None) -> dict[str, object]:
    spec: dict[str, object] = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    return {
        "apiVersion": "scheduling.skiff.dev/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def member(name: str, grp: str = "job", cpu: str = "1") -> dict[str, object]:
    return make_pod(name, cpu=cpu, labels={GROUP_LABEL: grp})


def nodes(n: int) -> list[dict[str, object]]:
    return [make_node(f"n{i}", cpu="1") for i in range(n)]


def test_group_waits_for_min_member_pods_then_binds_together() -> None:
    env = Env(nodes=nodes(3))
    env.sched.on_pod_group(group("job", 3))
    env.add(member("m0"), member("m1"))
    assert env.node_of("m0") is None and env.node_of("m1") is None
    assert "fewer than minMember 3" in env.message("m0")
    env.add(member("m2"))
    env.step(1.0)
    assert {env.node_of(f"m{i}") for i in range(3)} == {"n0", "n1", "n2"}


def test_partial_gang_holds_nothing() -> None:
    env = Env(nodes=nodes(2))
    env.sched.on_pod_group(group("job", 3))
    env.add(member("m0"), member("m1"), member("m2"))
    assert all(env.node_of(f"m{i}") is None for i in range(3))
    assert not env.sched.waiting.pods
    assert not env.sched.cache.assumed
    assert env.cluster.binds == []


def test_waiting_members_are_released_on_timeout() -> None:
    env = Env(nodes=nodes(3))
    env.sched.on_pod_group(group("job", 2, timeout=5))
    env.cluster.add_pod(member("m0"))
    env.cluster.add_pod(member("m1"))
    for kind, type_, obj in env.cluster.drain_events():
        env.sched.handle(kind, type_, obj)
    assert env.sched.schedule_one()  # m0 finds a node and waits at Permit
    assert set(env.sched.waiting.pods) == {"default/m0"}
    assert env.sched.cache.is_assumed("default/m0")
    env.clock.step(6)
    env.sched.tick()
    assert not env.sched.waiting.pods
    assert env.sched.cache.node_of("default/m0") is None
    assert "timed out" in env.message("m0")
    env.step(2.0)
    env.step(2.0)
    assert env.node_of("m0") is not None and env.node_of("m1") is not None


def test_pods_without_group_are_unaffected_and_unknown_group_waits() -> None:
    env = Env(nodes=nodes(2))
    env.add(make_pod("solo", cpu="1"), member("orphan", grp="nogroup"))
    assert env.node_of("solo") is not None
    assert env.node_of("orphan") is None
    assert 'pod group "nogroup" not found' in env.message("orphan")
    env.sched.on_pod_group(group("nogroup", 1))
    env.step(1.0)
    assert env.node_of("orphan") is not None


def test_volcano_annotation_joins_group() -> None:
    env = Env(nodes=nodes(2))
    env.sched.on_pod_group(group("vc", 2))
    pods = [
        make_pod(f"v{i}", cpu="1", annotations={"scheduling.k8s.io/group-name": "vc"})
        for i in range(2)
    ]
    env.add(*pods)
    env.step(1.0)
    assert env.node_of("v0") is not None and env.node_of("v1") is not None


def _gang_member(name: str, cpu: str = "2", prio: int = 100) -> dict[str, object]:
    return make_pod(name, cpu=cpu, priority=prio, labels={GROUP_LABEL: "g"})


def _half_placed(fits: bool) -> Env:
    """n1 (4 cpus) free, n0 (4 cpus) with two low- and two high-priority pods;
    a gang of 2-cpu members: 3 members fit after evicting the low pods, 4 never do."""
    env = Env(nodes=[make_node("n0", cpu="4"), make_node("n1", cpu="4")])
    for name, prio in (("hi1", 1000), ("hi2", 1000), ("lo1", 1), ("lo2", 1)):
        env.add(make_pod(name, cpu="1", priority=prio, node_name="n0"))
    size = 3 if fits else 4
    env.sched.on_pod_group(group("g", size))
    env.add(*(_gang_member(f"m{i}") for i in range(size)))
    return env


def test_no_preemption_for_a_gang_that_would_still_not_fit() -> None:
    env = _half_placed(fits=False)
    evicted = {k for k, p in env.cluster.pods.items() if p["metadata"].get("deletionTimestamp")}
    assert evicted == set()  # the old order evicted lo1 and lo2 for nothing
    # The members that had found places were released at once, not after 60 s
    # (one member may be waiting again, alone, since).
    assert "released: member m2 is unschedulable" in env.message("m0")
    assert len(env.sched.waiting.pods) <= 1
    assert all(env.node_of(f"m{i}") is None for i in range(4))


def test_preemption_for_a_gang_that_fits_after_it() -> None:
    env = _half_placed(fits=True)
    evicted = {k for k, p in env.cluster.pods.items() if p["metadata"].get("deletionTimestamp")}
    assert evicted == {"default/lo1", "default/lo2"}
    env.step(31)  # the victims' grace period
    env.step(2)
    assert {env.node_of(f"m{i}") for i in range(3)} == {"n0", "n1"}
