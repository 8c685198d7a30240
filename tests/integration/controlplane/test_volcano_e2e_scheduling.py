"""Volcano's own e2e scheduling cases (test/e2e/schedulingbase, schedulingaction,
jobp, jobseq), ported: a real control plane with Volcano's CI scheduler
configuration and hollow nodes sized for each case's arithmetic
(volcano_e2e.py: 4 nodes of 2 cpus, 8 one-cpu slots). Each test names the
upstream case it comes from; each failed on skiff before issue 35.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.api import volcano
from controlplane.client.errors import AlreadyExists
from tests.harness.wait import wait_for

from .volcano_e2e import (
    NS,
    SLOTS,
    Cluster,
    Task,
    cleanup,
    create,
    events,
    group_of,
    job,
    pods_of,
    running,
    start,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from start(tmp_path_factory.mktemp("vce2e"))


@pytest.fixture
def c(cluster: Cluster) -> Iterator[Cluster]:
    try:
        yield cluster
    finally:
        cleanup(cluster)


def test_schedule_multiple_jobs(c: Cluster) -> None:
    """schedulingbase/job_scheduling.go "Schedule Multiple Jobs": three jobs of
    minAvailable 2 over a task of as many replicas as the cluster has slots
    (the task's own minimum defaults to its replicas) all become ready: the
    job's minAvailable, below the tasks' sum, is what counts (JobInfo's
    CheckTaskReady), so none waits for a whole cluster of its own.

    Upstream creates the jobs back to back and relies on the scheduler's
    1 s period to see them in one session: a job allocated alone first takes
    every slot, and jobs of equal priority do not preempt each other (in
    Volcano neither). So the nodes are cordoned while the three are created
    and uncordoned together, and the first session that can place sees all three."""
    nodes = [n["metadata"]["name"] for n in c.api.list("Node").items]
    cordon(c, nodes, True)
    try:
        for name in ("mqj-1", "mqj-2", "mqj-3"):
            create(c, job(name, [Task("t", SLOTS, min=2)]))
        wait_for(lambda: all(group_of(c.api, n) for n in ("mqj-1", "mqj-2", "mqj-3")),
                 timeout=30, message="the three PodGroups")  # fmt: skip
    finally:
        cordon(c, nodes, False)
    wait_for(lambda: all(running(c.api, n) >= 2 for n in ("mqj-1", "mqj-2", "mqj-3")),
             timeout=60, message="each job has its 2 pods running")  # fmt: skip


def cordon(c: Cluster, nodes: list[str], unschedulable: bool) -> None:
    for name in nodes:
        c.api.patch("Node", name, {"spec": {"unschedulable": unschedulable}})


def test_unschedulable_event_for_a_gang_that_cannot_fit(c: Cluster) -> None:
    """jobp/job_lifecycle.go "Checking Unschedulable Event Generation for job":
    one more pod than a node holds, all bound to that node by affinity: the
    batch scheduler records an Unschedulable Event on the PodGroup (Volcano's
    WaitJobUnschedulable), with the gang's message."""
    node = c.api.list("Node").items[0]["metadata"]["name"]
    create(c, job("unschedulable-job", [Task("complete", 3, min=3, node=node)]))

    # While the Job controller is still making the pods, the gang is not yet
    # valid and Volcano says so in an Unschedulable event of its own ("Not
    # enough valid pods of each task..."); the event looked for comes once
    # every pod exists and still cannot fit.
    def unschedulable() -> list[dict[str, object]]:
        return [e for e in events(c.api, "PodGroup", "unschedulable-job", "Unschedulable")
                if "tasks in gang unschedulable: pod group is not ready" in str(e["message"])]  # fmt: skip

    (event, *_) = wait_for(unschedulable, timeout=60, message="Unschedulable event")
    assert event["type"] == "Warning" and event["source"] == {"component": "volcano"}
    cond = next(x for x in group_of(c.api, "unschedulable-job")["status"]["conditions"]
                if x["type"] == "Unschedulable")  # fmt: skip
    assert cond["reason"] == "NotEnoughResources"


def test_preemption_in_the_queue_for_a_high_priority_gang(c: Cluster) -> None:
    """schedulingaction/preempt.go "schedule high priority job with preemption
    when idle resource is NOT enough but preemptee resource is enough", with
    the CI configuration's enqueue action kept: a low-priority job fills the
    cluster; a high-priority gang of half the cluster passes the enqueue gate
    (its room comes from its own queue), half the low pods are evicted (an
    Evict Event on them and on their PodGroup) and the gang runs."""
    create(c, job("preemptee-1", [Task("t", SLOTS, min=1)], priority="low-priority"))
    wait_for(lambda: running(c.api, "preemptee-1") == SLOTS, timeout=60, message="preemptee fills")
    create(c, job("preemptor-1", [Task("t", SLOTS, min=SLOTS // 2)], priority="high-priority"))
    wait_for(lambda: running(c.api, "preemptor-1") >= SLOTS // 2, timeout=90,
             message="preemptor runs its gang")  # fmt: skip
    wait_for(lambda: running(c.api, "preemptee-1") == SLOTS // 2, timeout=30)
    evicted = events(c.api, "Pod", "preemptee-1", "Evict")
    assert evicted and evicted[0]["message"] == "Pod is evicted, because of preempt"
    assert events(c.api, "PodGroup", "preemptee-1", "Evict")


def test_a_podgroup_without_pods_is_inqueue(c: Cluster) -> None:
    """jobp/admission.go "Create volcano pod with volcano scheduler": a
    PodGroup created before its pods becomes Inqueue; its pod then runs."""
    c.api.create("PodGroup", {
        "apiVersion": volcano.SCHEDULING_API, "kind": "PodGroup",
        "metadata": {"name": "running-pg", "namespace": NS},
        "spec": {"minMember": 1, "minResources": {"cpu": "1"}},
    }, NS)  # fmt: skip
    try:
        wait_for(lambda: c.api.get("PodGroup", "running-pg", NS).get("status", {}).get("phase")
                 == "Inqueue", timeout=30, message="PodGroup Inqueue")  # fmt: skip
        c.api.create("Pod", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "volcano-pod", "namespace": NS,
                         "annotations": {volcano.GROUP_NAME_ANNOTATION: "running-pg"}},
            "spec": {"schedulerName": "volcano", "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "500m"}}}]},
        }, NS)  # fmt: skip
        wait_for(lambda: c.api.get("Pod", "volcano-pod", NS).get("status", {}).get("phase")
                 == "Running", timeout=30, message="its pod runs")  # fmt: skip
    finally:
        c.api.delete("Pod", "volcano-pod", NS)
        c.api.delete("PodGroup", "running-pg", NS)


def test_running_to_unknown_after_a_member_is_gone(c: Cluster) -> None:
    """jobseq/queue_job_status.go "Transform from running to unknown after a
    member is gone should succeed": a PodGroup of minMember 2 with two plain
    pods runs; one is force-deleted: the group, one member running and the
    gang no longer whole, is Unknown."""
    c.api.create("PodGroup", {
        "apiVersion": volcano.SCHEDULING_API, "kind": "PodGroup",
        "metadata": {"name": "pg-unknown", "namespace": NS}, "spec": {"minMember": 2},
    }, NS)  # fmt: skip
    names = [f"pg-unknown-{i}" for i in range(2)]
    try:
        for name in names:
            c.api.create("Pod", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": NS,
                             "annotations": {volcano.GROUP_NAME_ANNOTATION: "pg-unknown"}},
                "spec": {"schedulerName": "volcano", "restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "500m"}}}]},
            }, NS)  # fmt: skip

        def group_phase() -> str:
            return str(c.api.get("PodGroup", "pg-unknown", NS).get("status", {}).get("phase"))

        wait_for(lambda: group_phase() == "Running", timeout=30, message="PodGroup Running")
        from controlplane.client.interface import DeleteOptions

        c.api.delete("Pod", names[0], NS, DeleteOptions(grace_period_seconds=0))
        wait_for(lambda: group_phase() == "Unknown", timeout=30, message="PodGroup Unknown")
    finally:
        for name in names:
            try:
                c.api.delete("Pod", name, NS)
            except Exception:
                pass
        c.api.delete("PodGroup", "pg-unknown", NS)


def test_sla_permits_an_overlarge_job_to_be_inqueue(c: Cluster) -> None:
    """schedulingbase/sla.go "sla permits job to be inqueue": a job asking
    twice the cluster, its sla-waiting-time 3s, is enqueued once it has
    waited that long (its PodGroup Inqueue, its pods Pending), though
    overcommit alone would never let it in."""
    create(c, job("j1-overlarge", [Task("t", 2 * SLOTS, min=2 * SLOTS)],
                  annotations={"sla-waiting-time": "3s"}))  # fmt: skip
    wait_for(lambda: group_of(c.api, "j1-overlarge").get("status", {}).get("phase") == "Inqueue",
             timeout=30, message="the overlarge job Inqueue")  # fmt: skip
    wait_for(lambda: len(pods_of(c.api, "j1-overlarge")) == 2 * SLOTS, timeout=30)
    assert running(c.api, "j1-overlarge") == 0


def test_podgroup_count_after_a_deployment_rollout(c: Cluster) -> None:
    """schedulingbase/job_scheduling.go "PodGroup's Count change with
    Deployment's Request change": a Deployment of volcano pods rolls to a new
    ReplicaSet when its request changes; the old ReplicaSet's PodGroup goes
    (the pg-controller deletes a scaled-to-zero workload's group) and one
    PodGroup is left."""
    rep = SLOTS // 2 + 1

    def deployment(cpu: str) -> dict[str, object]:
        return {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d-1", "namespace": NS},
            "spec": {"replicas": rep, "selector": {"matchLabels": {"app": "d-1"}},
                     "template": {"metadata": {"labels": {"app": "d-1"}}, "spec": {
                         "schedulerName": "volcano", "containers": [{
                             "name": "c", "image": "busybox",
                             "resources": {"requests": {"cpu": cpu}}}]}}},
        }  # fmt: skip

    def groups() -> list[str]:
        return [g["metadata"]["name"] for g in c.api.list("PodGroup", NS).items
                if g["metadata"]["name"].startswith("podgroup-")]  # fmt: skip

    def ready() -> bool:
        d = c.api.get("Deployment", "d-1", NS)
        st = d.get("status") or {}
        return bool(st.get("updatedReplicas") == rep and st.get("availableReplicas") == rep
                    and st.get("replicas") == rep)  # fmt: skip

    c.api.create("Deployment", deployment("1"), NS)
    try:
        wait_for(ready, timeout=60, message="the Deployment ready")
        (old,) = wait_for(groups, timeout=30)
        d = c.api.get("Deployment", "d-1", NS)
        d["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "500m"
        c.api.update("Deployment", d)
        wait_for(lambda: ready() and old not in groups() and len(groups()) == 1, timeout=90,
                 message=f"one PodGroup left after the rollout, {old} gone: {groups()}")  # fmt: skip
    finally:
        c.api.delete("Deployment", "d-1", NS)
        wait_for(lambda: not [p for p in c.api.list("Pod", NS).items
                              if p["metadata"]["name"].startswith("d-1-")], timeout=60)  # fmt: skip


def test_upstream_volcano_rbac_beside_skiff_leaves_the_batch_scheduler_working(
    c: Cluster,
) -> None:
    """Volcano's installer (helm chart templates/scheduler.yaml) creates the
    ClusterRole `volcano-scheduler` and the ClusterRoleBinding
    `volcano-scheduler-role` for its ServiceAccount. Applied beside skiff they
    replace nothing of skiff's (its batch scheduler's are
    system:volcano-scheduler): jobs are still scheduled. (Applied as kubectl
    apply does: an object of the same name is replaced.)"""

    def apply(kind: str, obj: dict[str, Any]) -> None:
        try:
            c.api.create(kind, obj)
        except AlreadyExists:
            stored = c.api.get(kind, obj["metadata"]["name"])
            c.api.update(kind, {**stored, **{k: v for k, v in obj.items() if k != "metadata"}})

    apply(
        "ClusterRole",
        {
            "metadata": {"name": "volcano-scheduler"},
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}
            ],
        },
    )
    apply("ClusterRoleBinding", {
        "metadata": {"name": "volcano-scheduler-role"},
        "subjects": [{"kind": "ServiceAccount", "name": "volcano-scheduler",
                      "namespace": "volcano-system"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "volcano-scheduler"},
    })  # fmt: skip
    try:
        create(c, job("after-upstream", [Task("t", 2, min=2)]))
        wait_for(lambda: running(c.api, "after-upstream") == 2, timeout=60,
                 message="the batch scheduler still binds")  # fmt: skip
    finally:
        c.api.delete("ClusterRoleBinding", "volcano-scheduler-role")
        c.api.delete("ClusterRole", "volcano-scheduler")
