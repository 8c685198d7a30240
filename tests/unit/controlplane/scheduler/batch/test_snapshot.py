"""Sessions remember each job between them (snapshot.py, the settled statuses): what
changes in between must still reach the next session, and what does not must not
cost it a rebuild."""

from __future__ import annotations

import copy
from typing import Any

from controlplane.scheduler.batch.snapshot import Snapshots
from controlplane.scheduler.batch.status import COUNTS_PERIOD
from machinery.clock import FakeClock

from .harness import Env

Obj = dict[str, Any]


def finish(env: Env, prefix: str, phase: str = "Succeeded") -> None:
    """The agents report the pods finished: status writes only."""
    for key, pod in list(env.cluster.pods.items()):
        if key.split("/", 1)[1].startswith(prefix):
            done = copy.deepcopy(pod)
            done["status"] = {"phase": phase}
            env.cluster.pods[key] = done
            env.sched.on_pod(done)


def test_finished_pods_free_their_room_and_complete_their_group() -> None:
    env = Env()
    env.nodes(1, cpu="4")
    env.job("a", 4)
    env.run(2)
    assert len(env.bound("a")) == 4
    env.job("b", 4)
    env.run(2)
    assert not env.bound("b")  # no room while a runs
    finish(env, "a")
    env.run(2)
    assert len(env.bound("b")) == 4
    assert env.group_status("a")["phase"] == "Completed"
    assert env.group_status("a")["succeeded"] == 4


def test_a_running_group_is_not_rebuilt_by_sessions_that_do_not_touch_it() -> None:
    env = Env()
    env.nodes(2, cpu="4")
    env.job("a", 4)
    env.run(2)
    snapshots = env.sched.snapshots
    kept = snapshots._members_of("default/a")
    env.job("b", 2)
    env.run(2)
    assert len(env.bound("b")) == 2
    assert snapshots._members_of("default/a") is kept  # b's placements left a alone
    finish(env, "a", "Failed")
    assert snapshots._members_of("default/a") is not kept


def test_pod_counts_are_written_once_their_period_ends() -> None:
    clock = FakeClock()
    env = Env(clock=clock)
    env.nodes(1, cpu="4")
    env.job("a", 2, min_member=1)
    env.run(2)
    assert env.group_status("a")["running"] == 2
    finish(env, "a-t-1", "Failed")  # only the counts move: held back for the period
    env.run(1)
    assert env.group_status("a")["failed"] == 0
    clock.step(COUNTS_PERIOD)
    env.run(1)
    assert env.group_status("a")["failed"] == 1 and env.group_status("a")["running"] == 1


def test_a_session_copies_only_the_jobs_it_may_act_on() -> None:
    """Placed, settled groups stay out of the session: its cost follows the
    groups that changed or wait, not every group of the cluster."""
    env = Env()
    env.nodes(4, cpu="4")
    for i in range(6):
        env.job(f"r{i}", 2)
    env.run(3)
    assert len(env.bound("r")) == 12
    env.job("new", 2)
    st = env.sched.run_session()
    assert st.bound == 2
    assert st.jobs == 1  # the new one; the six running groups were not copied
    assert env.sched.run_session().jobs == 0  # its status written: settled


def _sums(env: Env) -> dict[str, tuple[object, ...]]:
    _jobs, queues, _total = env.sched.snapshots.take()
    return {n: (q.allocated, q.request, q.inqueue, q.lowest) for n, q in queues.items()}


def test_queue_sums_kept_across_sessions_equal_a_rebuild_from_scratch() -> None:
    env = Env()
    env.queue("other", weight=2)
    env.nodes(2, cpu="4")
    env.job("a", 3, queue="other", priority=5)
    env.job("b", 4, min_member=2)
    env.job("c", 6)  # does not fit: stays pending
    env.run(2)
    finish(env, "a-t-0")
    env.run(1)
    env.sched.on_pod_group({**env.sched.groups["default/c"], "status": {"phase": "Inqueue"}})
    env.sched.on_pod_group(env.sched.groups["default/b"], deleted=True)
    for step in range(3):
        kept = _sums(env)
        fresh = Snapshots(
            env.sched.cache, env.sched.groups, env.sched.members, env.sched.queues,
            env.sched.pending, env.sched.priority_classes,
        )  # fmt: skip
        fresh.invalidate_all()
        _jobs, queues, _total = fresh.take()
        assert kept == {n: (q.allocated, q.request, q.inqueue, q.lowest) for n, q in queues.items()}
        env.job(f"d{step}", 1, queue="other")
        env.run(1)
    assert kept["other"][3] == 0 and kept["default"][2] == {"cpu": 6000}


def test_queue_counts_of_jobs_by_phase_follow_each_job() -> None:
    env = Env()
    env.nodes(1, cpu="4")
    env.job("a", 4)
    env.job("b", 4)
    env.run(3)
    queue = env.cluster.statuses[("Queue", "default")]
    assert (queue["running"], queue["inqueue"] + queue["pending"]) == (1, 1)
    env.sched.on_pod_group(env.sched.groups["default/a"], deleted=True)
    for key in [k for k in env.cluster.pods if k.startswith("default/a-")]:
        env.cluster.finish(key)
    env.run(3)
    queue = env.cluster.statuses[("Queue", "default")]
    assert (queue["running"], queue["inqueue"] + queue["pending"]) == (1, 0)


def test_a_failed_status_write_is_made_again_at_the_next_session() -> None:
    env = Env()
    env.nodes(1, cpu="4")
    fail = ["default/a"]
    write = env.cluster.write_status

    def flaky(kind: str, obj: Obj, status: Obj) -> None:
        key = f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"
        if kind == "PodGroup" and key in fail:
            fail.remove(key)
            raise RuntimeError("the API server is busy")
        write(kind, obj, status)

    env.cluster.write_status = flaky  # type: ignore[method-assign]
    env.job("a", 2)
    env.sched.run_session()
    assert not env.group_status("a")
    env.sched.run_session()
    assert env.group_status("a")["phase"] == "Running"


def test_member_pods_status_writes_do_not_recompute_their_groups_status_each_session() -> None:
    clock = FakeClock()
    env = Env(clock=clock)
    env.nodes(2, cpu="4")
    env.job("a", 4)
    env.run(2)
    computed: list[str] = []
    group_status = env.sched._group_status

    def counting(job: Any, ssn: Any) -> Obj:
        computed.append(job.key)
        return group_status(job, ssn)

    env.sched._group_status = counting  # type: ignore[method-assign]
    for key, pod in list(env.cluster.pods.items()):  # the agents write each pod's status
        ready = copy.deepcopy(pod)
        ready["status"] = {"phase": "Running", "podIP": "10.0.0.1"}
        env.cluster.pods[key] = ready
        env.sched.on_pod(ready)
        env.sched.run_session()
    assert computed == []
    clock.step(COUNTS_PERIOD)
    env.run(2)
    assert computed == ["default/a"]
