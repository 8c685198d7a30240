"""Sessions remember each job between them (snapshot.py, the settled statuses): what
changes in between must still reach the next session, and what does not must not
cost it a rebuild."""

from __future__ import annotations

import copy

from controlplane.client.clock import FakeClock
from controlplane.scheduler.batch.status import COUNTS_PERIOD

from .harness import Env


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
