"""The batch scheduler's actions and plugins on an in-memory cluster (Volcano's semantics)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from machinery.clock import FakeClock
from tests.fakes.scheduler_objects import make_node

from .harness import Env


def test_gang_is_all_or_nothing() -> None:
    """The Unschedulable condition in Volcano's words (gang's OnSessionClose,
    JobInfo.FitError): five tasks could be placed, the sixth not."""
    env = Env()
    env.nodes(5, cpu="1")
    env.job("big", 6)
    env.run()
    assert env.bound() == {}
    st = env.group_status("big")
    assert st["phase"] == "Inqueue"
    (cond,) = st["conditions"]
    assert (cond["type"], cond["reason"]) == ("Unschedulable", "NotEnoughResources")
    assert cond["message"] == (
        "1/6 tasks in gang unschedulable: pod group is not ready, 6 Pending, 6 minAvailable; "
        "Pending: 1 Unschedulable, 5 Schedulable. Origin reason is big-t-5: "
        "0/5 nodes are available: 5 Insufficient cpu."
    )
    assert ("PodGroup", "big", "Warning", "Unschedulable", cond["message"]) in env.cluster.events
    env.sched.cache.on_node(make_node("n5", cpu="1"))  # room for the sixth: the gang starts whole
    env.run()
    assert len(env.bound("big")) == 6
    assert env.group_status("big")["phase"] == "Running"


def _share(env: Env, prefix: str) -> int:
    return len(env.bound(prefix))


def test_two_weighted_queues_share_a_full_cluster_one_to_three() -> None:
    env = Env()
    env.nodes(20)  # 80 cpus
    env.queue("a", weight=1)
    env.queue("b", weight=3)
    for i in range(40):
        env.job(f"a{i}", 2, queue="a")
        env.job(f"b{i}", 2, queue="b")
    env.run(6)
    a, b = _share(env, "a"), _share(env, "b")
    assert a + b == 80
    assert abs(a / 80 - 0.25) <= 0.05 and abs(b / 80 - 0.75) <= 0.05, (a, b)


RECLAIM = """
actions: "enqueue, allocate, reclaim, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""


def test_reclaim_gives_a_new_queue_its_deserved_share() -> None:
    env = Env(RECLAIM)
    env.nodes(4)  # 16 cpus
    env.queue("a")
    env.queue("b")
    for i in range(4):
        env.job(f"a{i}", 4, min_member=2, queue="a")  # two tasks of surplus each
    env.run()
    assert _share(env, "a") == 16
    env.job("b0", 8, min_member=8, queue="b")
    env.run(4)
    assert _share(env, "b0") == 8 and _share(env, "a") == 8
    # The surplus went: every one of queue a's gangs kept its minMember.
    assert all(_share(env, f"a{i}-") == 2 for i in range(4)), env.bound("a")


def test_reclaim_one_to_three_with_memory_requests() -> None:
    """Queue a fills the cluster; b (weight 3) comes: a is over its cpu share
    but at its memory share (b asks less memory than 3/4 of it, so a's share
    of memory grows), and reclaim still gives b its 75% of the cpus (each of
    a's elastic jobs keeps its minAvailable: Volcano's gang reclaimable)."""
    env = Env(RECLAIM)
    env.nodes(8)  # 32 cpus, 64Gi
    env.queue("a", weight=1)
    env.queue("b", weight=3)
    for i in range(8):
        env.job(f"a{i}", 4, min_member=1, queue="a", memory="1Gi")
    env.run()
    assert _share(env, "a") == 32
    for i in range(16):
        env.job(f"b{i}", 2, queue="b", memory="1Gi")
    env.run(8)
    a, b = _share(env, "a"), _share(env, "b")
    assert abs(a / 32 - 0.25) <= 0.05 and abs(b / 32 - 0.75) <= 0.05, (a, b)


def test_reclaim_respects_reclaimable_false() -> None:
    env = Env(RECLAIM)
    env.nodes(2)
    env.queue("a", reclaimable=False)
    env.queue("b")
    for i in range(4):
        env.job(f"a{i}", 2, min_member=1, queue="a")
    env.run()
    env.job("b0", 2, queue="b")
    env.run(3)
    assert env.cluster.evicted == [] and _share(env, "b0") == 0


def test_drf_orders_jobs_by_dominant_share() -> None:
    env = Env()
    env.nodes(1, cpu="6")
    env.job("rich", 3, min_member=1)
    env.run()
    # rich holds 3 cpus; of two new jobs wanting the last 3, the one whose
    # job has the smaller dominant share goes first.
    env.job("rich2", 1, cpu="3")  # newer owner job, share 0
    env.sched.cache.on_pod(  # one more task of `rich`, pending, older job, share 0.5
        __import__("tests.fakes.scheduler_objects", fromlist=["make_pod"]).make_pod(
            "rich-t-9", cpu="3", scheduler_name="volcano",
            annotations={"scheduling.k8s.io/group-name": "rich", "volcano.sh/task-spec": "t"},
        )
    )  # fmt: skip
    env.run()
    assert "default/rich2-t-0" in env.bound() and "default/rich-t-9" not in env.bound()


def test_drf_interleaves_two_elastic_jobs_in_one_session() -> None:
    """Both jobs wait when the room appears at once: `fat` tasks take 2 cpus
    (1/16 of the cluster each), `thin` ones 1 (1/32). The job with the
    smaller dominant share takes each place, so thin ends with about twice
    fat's tasks; taking each job whole in turn, fat, the older, would fill
    all 32 cpus with 16 tasks."""
    env = Env()
    env.job("fat", 40, cpu="2", min_member=1)
    env.job("thin", 40, min_member=1)
    env.run(1)  # enqueued on an empty cluster, nothing placed
    env.nodes(8)  # 32 cpus
    env.run(1)
    fat, thin = len(env.bound("fat")), len(env.bound("thin"))
    assert 2 * fat + thin == 32 and 7 <= fat <= 9, (fat, thin)


PREEMPT = """
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf, enablePreemptable: false}, {name: predicates}, {name: proportion},
            {name: nodeorder}]
"""


def test_preempt_by_priority_inside_a_queue() -> None:
    env = Env(PREEMPT)
    env.nodes(2)  # 8 cpus
    env.job("low", 8, min_member=1, priority=1)
    env.run()
    assert _share(env, "low") == 8
    env.job("high", 3, priority=100)
    env.run(3)
    assert _share(env, "high") == 3
    assert len(env.cluster.evicted) == 3 and all("low" in k for k in env.cluster.evicted)


def test_preempt_when_the_victims_are_made_again_under_their_names() -> None:
    """A Volcano Job re-creates its evicted pods under the same names: the
    preemptor is not fooled into waiting for ever, and the room freed one
    victim at a time is held for it, not given to the re-made pods."""
    env = Env(PREEMPT)
    env.cluster.graceful = True
    env.nodes(2)  # 8 cpus
    env.job("low", 8, min_member=1, priority=1)
    env.run()
    assert _share(env, "low") == 8
    env.job("high", 3, priority=100)
    env.run()
    victims = list(env.cluster.evicted)
    assert len(victims) == 3 and not env.bound("high")
    for key in victims:
        env.cluster.finish(key, recreate=True)
        env.run(2)
        if key != victims[-1]:
            assert not env.bound("high")
    assert len(env.bound("high")) == 3
    assert len(env.bound("low")) == 5 and len(env.cluster.evicted) == 3


def test_no_eviction_for_a_gang_that_would_still_not_fit() -> None:
    env = Env(PREEMPT)
    env.nodes(2)
    env.job("low", 4, min_member=4, priority=1)  # a running gang: no surplus
    env.job("low2", 4, min_member=1, priority=1)
    env.run()
    assert _share(env, "low") == 8
    env.job("huge", 6, priority=100)  # could free only low2's 3 surplus + 1
    env.run(3)
    assert env.cluster.evicted == [] and _share(env, "huge") == 0


def test_backfill_places_best_effort_pods() -> None:
    env = Env()
    env.nodes(1, cpu="1")
    env.job("full", 1)
    env.job("be", 3, best_effort=True, min_member=0)
    env.run()
    assert len(env.bound("be")) == 3


BINPACK = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder},
            {name: binpack, arguments: {binpack.weight: 10}}]
"""


def test_binpack_fills_nodes() -> None:
    env = Env(BINPACK)
    env.nodes(4)
    for i in range(4):
        env.job(f"j{i}", 1)
        env.run(1)
    assert len(set(env.bound().values())) == 1


def test_reclaim_stops_at_a_queue_guarantee() -> None:
    env = Env(RECLAIM)
    env.nodes(4)  # 16 cpus
    env.queue("a", guarantee={"resource": {"cpu": "12"}})
    env.queue("b")
    for i in range(4):
        env.job(f"a{i}", 4, min_member=1, queue="a")
    env.run()
    assert _share(env, "a") == 16
    env.job("b0", 8, min_member=1, queue="b")
    env.run(4)
    assert _share(env, "a") == 12 and _share(env, "b0") == 4


def test_a_session_whose_snapshot_spent_its_budget_still_places_one_job() -> None:
    """The budget counts from the session's start: a snapshot that took it all
    (the first over many new groups) leaves one job placed, not a longer
    session; the session says it was cut short and the next ones place the rest."""
    clock = FakeClock()
    env = Env(clock=clock)
    env.nodes(4)
    for i in range(3):
        env.job(f"j{i}", 2)
    snapshots = env.sched.cache.snapshots
    take = snapshots.take

    def slow_take(want: Iterable[str] = ()) -> Any:
        clock.step(env.sched.driver.budget)  # the snapshot took the whole budget
        return take(want)

    snapshots.take = slow_take  # type: ignore[method-assign]
    st = env.sched.run_session()
    assert (st.bound, st.cut_short) == (2, True)
    assert len(env.bound()) == 2
    env.run(2)
    assert len(env.bound()) == 6
