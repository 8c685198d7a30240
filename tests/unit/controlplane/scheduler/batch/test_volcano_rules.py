"""Volcano's JobInfo rules, PodGroup phases, enqueue and sla on an in-memory
cluster; the same cases end to end are in
tests/integration/controlplane/test_volcano_e2e.py."""

from __future__ import annotations

import copy

from controlplane.api import volcano
from machinery import rfc3339
from machinery.clock import FakeClock
from tests.fakes.scheduler_objects import make_pod

from .harness import Env

JAN1 = rfc3339.parse_time("2026-01-01T00:00:00Z") or 0.0
CI_LIKE = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: sla
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def _set_phase(env: Env, prefix: str, phase: str) -> None:
    for key, pod in list(env.cluster.pods.items()):
        if key.split("/", 1)[1].startswith(prefix):
            done = copy.deepcopy(pod)
            done["status"] = {"phase": phase}
            env.cluster.pods[key] = done
            env.sched.cache.on_pod(done)


def test_an_elastic_job_needs_its_minavailable_not_every_task_replica() -> None:
    """minAvailable 2 over a task of 16 replicas whose minTaskMember is 16
    (what Volcano's webhook and Job controller give it): the task minimum
    does not count (CheckTaskReady: minAvailable < the tasks' sum), so two
    pods on four slots make the gang, and the rest fill what is free."""
    env = Env()
    env.nodes(1, cpu="4")
    env.job("elastic", 16, min_member=2, min_task=16)
    env.run()
    assert len(env.bound("elastic")) == 4
    assert env.group_status("elastic")["phase"] == "Running"


def test_task_minimums_count_where_minavailable_covers_them() -> None:
    env = Env()
    env.nodes(1, cpu="4")
    env.job("strict", 6, min_member=6, min_task=6)
    env.run()
    assert not env.bound("strict")


def test_a_job_with_fewer_pods_than_a_task_minimum_is_invalid() -> None:
    """gang's JobValid: NotEnoughPodsOfTask when a task has fewer pods than its minimum."""
    env = Env()
    env.nodes(2)
    env.job("short", 2, min_member=3, min_task=3)
    env.run()
    cond = env.group_status("short")["conditions"][0]
    assert (cond["reason"], cond["message"]) == (
        "NotEnoughPodsOfTask",
        "Not enough valid pods of each task for gang-scheduling",
    )


def test_a_podgroup_without_pods_is_enqueued() -> None:
    """Volcano's enqueue asks no validity: a PodGroup made before its pods is Inqueue."""
    env = Env()
    env.nodes(1)
    env.job("empty", 0, min_member=1)
    env.run()
    assert env.group_status("empty")["phase"] == "Inqueue"


def test_a_podgroup_seen_before_its_pods_is_enqueued_beside_running_jobs() -> None:
    """Volcano's proportion admits a job within the queue's real capability,
    not its deserved share (which counts only jobs whose pods exist): a
    PodGroup the scheduler sees before its pods (a separate watch) on a
    roomy cluster is Inqueue, with no "queue resource quota insufficient"."""
    env = Env()
    env.nodes(4, cpu="4")
    env.job("running", 2)
    env.run()
    assert len(env.bound("running")) == 2
    env.job("early", 0, min_member=4)  # its four pods not seen yet
    env.run()
    assert env.group_status("early")["phase"] == "Inqueue"
    assert not [e for e in env.cluster.events if e[1] == "early"]
    for i in range(4):  # the pods arrive
        env.sched.cache.on_pod(make_pod(
            f"early-t-{i}", cpu="1", scheduler_name="volcano",
            annotations={volcano.GROUP_NAME_ANNOTATION: "early", volcano.TASK_SPEC: "t"},
        ))  # fmt: skip
    env.run()
    assert len(env.bound("early")) == 4
    assert env.group_status("early")["phase"] == "Running"


def test_a_gang_whose_pods_all_failed_is_completed() -> None:
    env = Env()
    env.nodes(1)
    env.job("doomed", 2)
    env.run()
    _set_phase(env, "doomed", "Failed")
    env.run()
    st = env.group_status("doomed")
    assert (st["phase"], st["failed"]) == ("Completed", 2)


def test_a_running_gang_that_lost_a_member_it_cannot_place_again_is_unknown() -> None:
    env = Env()
    env.nodes(1, cpu="2")
    env.job("a", 2)
    env.run()
    _set_phase(env, "a", "Running")
    env.job("hog", 1, cpu="1")  # takes the room of the pod about to go
    key = "default/a-t-1"
    gone = env.cluster.pods.pop(key)
    env.sched.cache.on_pod(gone, deleted=True)
    env.run()
    again = copy.deepcopy(gone)  # its controller makes it again, pending
    again["metadata"]["uid"] += "-again"
    again["spec"].pop("nodeName")
    again["status"] = {}
    env.sched.cache.on_pod(again)
    env.run()
    st = env.group_status("a")
    assert st["phase"] == "Unknown" and st["running"] == 1
    assert st["conditions"][0]["type"] == "Unschedulable"


def test_sla_orders_jobs_by_their_waiting_limit_and_enqueues_a_job_past_it() -> None:
    """Volcano's sla plugin: the job asking more than the cluster is enqueued
    once it has waited its sla-waiting-time; of two that fit one at a time,
    the one with the earlier deadline goes first."""
    clock = FakeClock(start=JAN1)
    env = Env(CI_LIKE, clock=clock)
    env.nodes(1, cpu="4")
    env.job("overlarge", 8, annotations={"sla-waiting-time": "3s"})
    env.run(1)
    assert env.group_status("overlarge")["phase"] == "Pending"
    clock.step(3600)
    env.run(1)
    assert env.group_status("overlarge")["phase"] == "Inqueue"
    env.sched.cache.on_pod_group({**env.sched.cache.groups["default/overlarge"]}, deleted=True)
    for i in range(8):
        env.sched.cache.on_pod(
            {"metadata": {"name": f"overlarge-t-{i}", "namespace": "default"}}, deleted=True
        )
    env.job("slow", 4, annotations={"sla-waiting-time": "1h"})
    env.job("fast", 4, annotations={"sla-waiting-time": "30m"})
    env.run()
    assert len(env.bound("fast")) == 4 and not env.bound("slow")


NODEORDER_WEIGHTS = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
    arguments:
      leastrequested.weight: 0
      balancedresource.weight: 0
  - name: binpack
"""


def test_binpack_wins_where_nodeorder_weights_let_it() -> None:
    """schedulingbase "support binpack policy", with Volcano's nodeorder
    arguments: spreading weighed to nothing, the half-cpu pods fill the node
    the base pod is on (its binpack score is highest); with nodeorder's
    defaults they would spread."""
    env = Env(NODEORDER_WEIGHTS)
    env.nodes(4, cpu="4", memory="8Gi")
    env.job("base", 1, cpu="1")
    env.run(2)
    (node,) = env.bound("base").values()
    env.job("pack", 6, cpu="0.5")
    env.run(2)
    assert set(env.bound("pack").values()) == {node}


CAPACITY = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: capacity
    enableHierarchy: true
  - name: nodeorder
"""


def test_capacity_hierarchy_limits_a_child_by_its_parent_and_refuses_non_leaf_queues() -> None:
    """Volcano's capacity plugin with enableHierarchy: a child queue's jobs fit
    its parent's capability too (the child's own is larger), and a queue
    with children takes no job."""
    env = Env(CAPACITY)
    env.nodes(4, cpu="4")
    env.queue("parent", capability={"cpu": "4"})
    env.queue("child", parent="parent", capability={"cpu": "16"})
    for i in range(6):
        env.job(f"c{i}", 1, queue="child")
    env.job("p0", 1, queue="parent")
    env.run(3)
    assert len(env.bound("c")) == 4  # the parent's 4 cpus
    assert not env.bound("p0")
    assert env.group_status("p0")["phase"] == "Pending"
