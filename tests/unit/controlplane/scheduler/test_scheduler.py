"""The scheduler end to end over an in-memory cluster: place, explain, retry, bind failures."""

from __future__ import annotations

from collections.abc import Callable

from controlplane.scheduler.cache import CPU_COL
from controlplane.scheduler.types import ANY_EVENT
from tests.fakes.scheduler_objects import make_node, make_pod

from .harness import Env


def test_schedules_onto_least_allocated_node_and_records_breakdown() -> None:
    env = Env(nodes=[make_node("busy", cpu="4"), make_node("idle", cpu="4")])
    env.add(make_pod("filler", cpu="3", node_name="busy"))
    env.add(make_pod("p", cpu="500m", memory="100Mi"))
    assert env.node_of("p") == "idle"
    d = env.sched.explain("default/p")
    assert d is not None and d.node == "idle"
    chosen, runner_up = d.breakdown["nodes"]
    assert chosen["node"] == "idle" and runner_up["node"] == "busy"
    assert (
        chosen["plugins"]["NodeResourcesFit"]["score"]
        > runner_up["plugins"]["NodeResourcesFit"]["score"]
    )
    assert chosen["total"] == sum(v["score"] * v["weight"] for v in chosen["plugins"].values())


def test_assumed_pods_count_before_binds_are_confirmed() -> None:
    env = Env(nodes=[make_node("a", cpu="1"), make_node("b", cpu="1")])
    for i in range(2):
        env.cluster.add_pod(make_pod(f"p{i}", cpu="800m"))
    for kind, type_, obj in env.cluster.drain_events():
        env.sched.handle(kind, type_, obj)
    env.sched.schedule_pending()  # no bind events delivered yet
    assert {env.node_of("p0"), env.node_of("p1")} == {"a", "b"}


def test_unschedulable_message_and_retry_on_node_add() -> None:
    gpu = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    nodes = [make_node(f"small{i}", cpu="1") for i in range(3)] + [
        make_node(f"gpu{i}", cpu="8", taints=gpu) for i in range(2)
    ]
    env = Env(nodes=nodes)
    env.add(make_pod("big", cpu="2"))
    assert env.node_of("big") is None
    assert env.message("big").startswith(
        "0/5 nodes are available: 2 node(s) had untolerated taint {dedicated: gpu}, 3 Insufficient cpu."
    )
    assert env.cluster.messages["default/big"] == env.message("big")
    assert "preemption: 0/5 nodes are available" in env.message("big")
    env.cluster.add_node(make_node("large", cpu="4"))
    env.step(1.0)  # past the backoff
    assert env.node_of("big") == "large"


def test_pending_pod_is_retried_after_a_pod_is_deleted() -> None:
    env = Env(nodes=[make_node("n", cpu="1")])
    env.add(make_pod("holder", cpu="1", node_name="n"))
    env.add(make_pod("waiter", cpu="1"))
    assert env.node_of("waiter") is None
    env.cluster.delete_pod("default/holder")
    env.step(2.0)
    assert env.node_of("waiter") == "n"


def test_failed_bind_forgets_and_requeues() -> None:
    env = Env(nodes=[make_node("n", cpu="1")])
    env.cluster.fail_binds.add("default/p")
    env.add(make_pod("p", cpu="1"))
    assert env.node_of("p") is None
    assert env.sched.stats["bind_failures"] == 1
    assert env.sched.cache.node_of("default/p") is None  # assumption forgotten
    env.cluster.fail_binds.clear()
    env.step(1.0)
    assert env.node_of("p") == "n"


def test_node_deleted_between_decision_and_bind_requeues() -> None:
    env = Env(nodes=[make_node("gone", cpu="4"), make_node("stays", cpu="1")])
    env.add(make_pod("filler", cpu="1", node_name="stays"))
    # The node disappears from the API before the scheduler hears of it.
    del env.cluster.nodes["gone"]
    env.add(make_pod("p", cpu="500m"))
    assert env.node_of("p") is None
    assert "not found" in env.message("p")
    env.sched.on_node_delete(make_node("gone"))
    env.cluster.delete_pod("default/filler")
    env.step(1.0)
    assert env.node_of("p") == "stays"


def test_pods_for_other_schedulers_are_ignored() -> None:
    env = Env(nodes=[make_node("n")])
    env.add(make_pod("mine"), make_pod("theirs", scheduler_name="other-scheduler"))
    assert env.node_of("mine") == "n"
    assert env.node_of("theirs") is None
    assert "default/theirs" not in env.sched.queue


def test_profiles_by_scheduler_name_binpack_vs_spread() -> None:
    cfg = {
        "percentageOfNodesToScore": 100,
        "profiles": [
            {"schedulerName": "default-scheduler"},
            {
                "schedulerName": "binpack",
                "pluginConfig": [
                    {
                        "name": "NodeResourcesFit",
                        "args": {"scoringStrategy": {"type": "MostAllocated"}},
                    }
                ],
                "disabled": ["NodeResourcesBalancedAllocation"],
            },
        ],
    }
    env = Env(cfg, nodes=[make_node(f"n{i}", cpu="4", memory="4Gi") for i in range(4)])
    env.add(*[make_pod(f"s{i}", cpu="1", memory="1Gi") for i in range(4)])
    assert len({env.node_of(f"s{i}") for i in range(4)}) == 4
    env.add(
        *[make_pod(f"b{i}", cpu="500m", memory="512Mi", scheduler_name="binpack") for i in range(4)]
    )
    assert len({env.node_of(f"b{i}") for i in range(4)}) == 1


def test_rotating_start_gives_every_node_a_turn() -> None:
    env = Env(
        {"percentageOfNodesToScore": 1},
        nodes=[make_node(f"n{i:03}", cpu="100", pods="1000") for i in range(300)],
    )
    fw = env.sched.profiles["default-scheduler"]
    env.add(make_pod("p0", cpu="1"))
    assert fw.next_start == 100  # 100 nodes visited (the minimum), start moves on
    env.add(make_pod("p1", cpu="1"))
    env.add(make_pod("p2", cpu="1"))
    assert fw.next_start == 0
    nodes = {env.node_of(f"p{i}") for i in range(3)}
    assert len(nodes) == 3
    assert {int(n[1:]) // 100 for n in nodes if n} == {0, 1, 2}


class _Later:
    """An executor that holds binding cycles until the test runs them."""

    def __init__(self) -> None:
        self.held: list[Callable[[], None]] = []

    def submit(self, fn: Callable[[], None]) -> None:
        self.held.append(fn)


def test_node_delete_seen_before_the_failed_bind_still_requeues() -> None:
    env = Env(nodes=[make_node("gone", cpu="4"), make_node("stays", cpu="1")])
    env.add(make_pod("filler", cpu="1", node_name="stays"))
    env.cluster.add_pod(make_pod("p", cpu="500m"))
    for kind, type_, obj in env.cluster.drain_events():
        env.sched.handle(kind, type_, obj)
    # The scheduler decides on "gone"; the bind runs only after the node is deleted.
    later = _Later()
    inline = env.sched.executor
    env.sched.executor = later
    assert env.sched.schedule_one()
    assert env.sched.cache.node_of("default/p") == "gone"
    env.cluster.delete_node("gone")
    env.pump()
    for fn in later.held:
        fn()
    env.sched.executor = inline
    assert env.sched.cache.node_of("default/p") is None
    env.cluster.delete_pod("default/filler")
    env.step(1.0)
    assert env.node_of("p") == "stays"


def test_new_extended_resource_with_nominated_pods() -> None:
    env = Env(nodes=[make_node("n", cpu="2")])
    env.add(make_pod("low", cpu="2", priority=1, node_name="n"))
    env.add(make_pod("high", cpu="1", priority=100))
    assert env.sched.cache.nominated
    env.add(make_pod("gpu", requests={"example.com/gpu": "1"}))
    assert "Insufficient example.com/gpu" in env.message("gpu")


def test_unchanged_explanation_is_written_once() -> None:
    writes: list[str] = []
    env = Env(nodes=[make_node("n", cpu="1")])
    real = env.cluster.report_unschedulable

    def counting(pod: dict[str, object], message: str) -> None:
        writes.append(message)
        real(pod, message)

    env.cluster.report_unschedulable = counting  # type: ignore[method-assign]
    env.add(make_pod("big", cpu="2"))
    for _ in range(3):
        env.sched.queue.move_on_event(ANY_EVENT)
        env.step(11.0)
    assert len(writes) == 1
    env.cluster.add_node(make_node("m", cpu="1"))
    env.step(11.0)
    assert len(writes) == 2 and writes[1].startswith("0/2 nodes are available")


def test_batched_binds_write_every_pod_and_requeue_a_failed_one() -> None:
    from controlplane.scheduler import config
    from controlplane.scheduler.scheduler import SCORES_ANNOTATION, from_config
    from machinery.clock import FakeClock
    from tests.fakes.scheduler_cluster import InMemoryCluster
    from tests.harness.wait import wait_for

    clock = FakeClock()
    cluster = InMemoryCluster(clock)
    sched = from_config(config.parse(None), cluster, clock=clock, bind_batch_threads=2)
    try:
        for i in range(3):
            node = make_node(f"n{i}", cpu="4")
            cluster.add_node(node)
            sched.on_node_add(node)
        cluster.fail_binds.add("default/p7")
        for i in range(20):
            pod = make_pod(f"p{i}", cpu="100m")
            cluster.add_pod(pod)
            sched.on_pod_add(pod)
        assert sched.schedule_pending() == 20
        wait_for(lambda: sched.stats["scheduled"] + sched.stats["bind_failures"] == 20, timeout=10)
        assert sched.stats == dict(sched.stats, scheduled=19, bind_failures=1)
        assert len(cluster.binds) == 19 and "default/p7" not in dict(cluster.binds)
        # The bind carried the decision's scores; the failed pod's assumption is
        # undone and it waits to be retried.
        assert SCORES_ANNOTATION in cluster.pods["default/p0"]["metadata"]["annotations"]
        assert sched.cache.node_of("default/p7") is None
        assert "default/p7" in sched.queue
        cluster.fail_binds.clear()
        clock.step(30)
        sched.schedule_pending()
        wait_for(lambda: sched.stats["scheduled"] == 20, timeout=10)
        assert cluster.pods["default/p7"]["spec"]["nodeName"]
    finally:
        sched.shutdown_binds()


def test_a_finished_pod_frees_its_nodes_room() -> None:
    """A pod that ran to Succeeded or Failed holds nothing on its node, as
    kube-scheduler's informer drops terminal pods."""
    env = Env(nodes=[make_node("n", cpu="2")])
    running = [make_pod(f"job-{i}", cpu="1", node_name="n") for i in range(2)]
    for pod in running:
        pod["status"] = {"phase": "Running"}
    env.add(*running)
    env.add(make_pod("waiter", cpu="1"))
    assert env.node_of("waiter") is None
    for pod, phase in zip(running, ("Succeeded", "Failed"), strict=True):
        done = {**pod, "status": {"phase": phase}}
        env.sched.events.on_pod_update(done, pod)  # a status write, as the informer hands it
    slot = env.sched.cache.nodes["n"].slot
    assert env.sched.cache.req[slot, CPU_COL] == 0
    env.step(2.0)
    assert env.node_of("waiter") == "n"
