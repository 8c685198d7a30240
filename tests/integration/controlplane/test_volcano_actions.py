"""Volcano's queue, preempt, backfill and binpack semantics on a real control
plane (in this process, SQLite in a temp dir) with hollow nodes: Volcano Jobs
go through the API server, the Job controller makes their pods, the batch
scheduler (its own conf below) binds and evicts them, and the hollow nodes
report bound pods Running and finish deleted ones, as agents would.

The in-memory tests of the same rules are in
tests/unit/controlplane/scheduler/batch/test_actions.py; these show them
end to end. Every test removes its Jobs and waits for their pods to go.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import pytest

from agent.hollow import HollowConfig, HollowNodes
from controlplane import main as cp_main
from controlplane.api import volcano
from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.errors import NotFound
from controlplane.client.interface import DeleteOptions
from controlplane.scheduler.batch import run as batch_run
from tests.harness.hollow import wait_schedulable
from tests.harness.wait import wait_for

pytestmark = pytest.mark.slow
NODES, CPUS = 8, 4  # 32 cpus

# gang does not vote on preemption victims, as in Volcano's own configurations
# (its gang keeps a job's minAvailable: a plain pod's group of one would be no victim).
CONF = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.weight: 10
"""


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GrpcApiClient]:
    base = tmp_path_factory.mktemp("vcactions")
    conf = base / "volcano-scheduler.conf"
    conf.write_text(CONF)
    mp = pytest.MonkeyPatch()
    mp.setenv(batch_run.CONFIG_ENV, str(conf))
    # nodelifecycle lifts the not-ready taint every new Node starts with.
    args = cp_main.build_parser().parse_args(
        ["--listen", "127.0.0.1:0", "--data-dir", str(base / "cp"), "--controllers",
         "volcano-job,volcano-podgroup,volcano-queue,garbagecollector,nodelifecycle"]
    )  # fmt: skip
    running = cp_main.start(args)
    client = connect(running.admin, timeout=30)
    nodes = HollowNodes(
        client, HollowConfig(nodes=NODES, cpu=str(CPUS), memory="16Gi", prefix="va")
    )
    try:
        nodes.start()
        wait_schedulable(client, NODES)
        for name, value in (("vc-low", 1), ("vc-high", 100)):
            client.create("PriorityClass", {"metadata": {"name": name}, "value": value})
        yield client
    finally:
        nodes.stop()
        client.close()
        running.stop()
        mp.undo()


def vcjob(
    name: str,
    replicas: int,
    min_available: int,
    queue: str = "default",
    cpu: str | None = "1",
    priority: str = "",
    memory: str = "",
) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "busybox", "resources": {}}],
        "restartPolicy": "Never",
    }
    if cpu is not None:
        requests = {"cpu": cpu, **({"memory": memory} if memory else {})}
        pod_spec["containers"][0]["resources"] = {"requests": requests}
    if priority:
        pod_spec["priorityClassName"] = priority
    spec: dict[str, Any] = {
        "minAvailable": min_available,
        "schedulerName": "volcano",
        "queue": queue,
        # (a task's minAvailable defaults to its replicas, as Volcano's webhook
        # has it: an elastic job says so for its task too)
        "tasks": [
            {
                "name": "t",
                "replicas": replicas,
                "minAvailable": min_available,
                "template": {"spec": pod_spec},
            }
        ],
    }
    if priority:
        spec["priorityClassName"] = priority
    return {
        "apiVersion": volcano.BATCH_API,
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def bound(api: GrpcApiClient, prefix: str) -> list[dict[str, Any]]:
    """Pods of the Jobs named `prefix...` that are bound and not being deleted."""
    return [
        p
        for p in api.list("Pod", "default").items
        if str((p["metadata"].get("labels") or {}).get(volcano.JOB_NAME, "")).startswith(prefix)
        and p["spec"].get("nodeName")
        and not p["metadata"].get("deletionTimestamp")
    ]


@pytest.fixture
def queues(api: GrpcApiClient) -> Iterator[list[str]]:
    """Names of the Queues a test made: deleted after its Jobs (a queue left
    behind with a share would shrink the next test's default queue)."""
    names: list[str] = []
    yield names
    for name in names:
        api.delete("Queue", name)


@pytest.fixture
def jobs(api: GrpcApiClient) -> Iterator[list[str]]:
    """Names of the Jobs a test made: deleted after it, their pods awaited."""
    names: list[str] = []
    yield names
    for name in names:
        try:
            api.delete(volcano.JOB_KEY, name, "default")
        except NotFound:
            pass

    def gone() -> bool:
        # (a hollow node that is still starting a pod misses its deletion:
        # what is left after the jobs went is removed at once)
        for p in api.list("Pod", "default").items:
            try:
                api.delete(
                    "Pod", p["metadata"]["name"], "default", DeleteOptions(grace_period_seconds=0)
                )
            except NotFound:
                pass
        return not api.list("Pod", "default").items

    wait_for(gone, timeout=60, interval=0.5, message="every pod gone")


def create(api: GrpcApiClient, jobs: list[str], job: dict[str, Any]) -> None:
    api.create(volcano.JOB_KEY, job, "default")
    jobs.append(job["metadata"]["name"])


def test_two_queues_weighted_one_to_three_converge_on_a_full_cluster(
    api: GrpcApiClient, queues: list[str], jobs: list[str]
) -> None:
    """Jobs arrive one by one, so queue qa first takes more than its share;
    reclaim takes the surplus of its elastic jobs (minAvailable 1 of 4)
    back for qb until the cluster is split 1:3 (within 5%)."""
    for name, weight in (("qa", 1), ("qb", 3)):
        api.create("Queue", {"metadata": {"name": name}, "spec": {"weight": weight}})
        queues.append(name)
    for i in range(8):  # each queue asks for all 32 cpus
        create(api, jobs, vcjob(f"qa-{i}", 4, 1, queue="qa"))
        create(api, jobs, vcjob(f"qb-{i}", 4, 1, queue="qb"))
    total = NODES * CPUS
    seen: list[tuple[int, int]] = []

    def converged() -> bool:
        a, b = len(bound(api, "qa-")), len(bound(api, "qb-"))
        seen.append((a, b))
        return a + b == total and abs(a / total - 0.25) <= 0.05 and abs(b / total - 0.75) <= 0.05

    try:
        wait_for(converged, timeout=90, interval=0.5, message="a 1:3 split of the cluster")
    finally:
        print("bound (qa, qb) while converging:", seen[::10], seen[-1:])


def low_pod(i: int) -> dict[str, Any]:
    """A plain pod for the batch scheduler (the pg-controller gives it a
    PodGroup of one in the default queue)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"low-{i}", "namespace": "default", "labels": {"vc": "low"}},
        "spec": {
            "schedulerName": "volcano",
            "priorityClassName": "vc-low",
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
            ],
        },
    }


def test_priority_preempts_inside_a_queue(api: GrpcApiClient, jobs: list[str]) -> None:
    """A gang of higher priority evicts three low-priority pods of the same
    (default) queue and runs whole. The victims are plain pods (a Volcano Job
    as the victim: the test after this one)."""
    for i in range(NODES * CPUS):
        api.create("Pod", low_pod(i), "default")

    def low() -> list[dict[str, Any]]:
        return [
            p
            for p in api.list("Pod", "default").items
            if p["metadata"]["name"].startswith("low-")
            and p["spec"].get("nodeName")
            and not p["metadata"].get("deletionTimestamp")
        ]

    wait_for(lambda: len(low()) == NODES * CPUS, timeout=60, message="low fills")
    create(api, jobs, vcjob("high", 3, 3, priority="vc-high"))
    wait_for(lambda: len(bound(api, "high")) == 3, timeout=60, message="high placed")
    assert len(low()) == NODES * CPUS - 3


HOLD = "skiff.test/hold"


def _hold(api: GrpcApiClient, name: str, on: bool) -> None:
    """A finalizer keeps a deleted pod terminating until the test lets it go."""
    try:
        api.patch("Pod", name, {"metadata": {"finalizers": [HOLD] if on else None}}, "default")
    except NotFound:
        pass


def test_priority_preempts_a_volcano_job_that_makes_its_pods_again(
    api: GrpcApiClient, jobs: list[str]
) -> None:
    """The victims belong to a Volcano Job, which makes its evicted pods again
    under the same names. The victims go one at a time (a finalizer holds
    each), and after each a session runs (a best-effort pod made then is
    bound): the room each leaves is held for the gang of higher priority, not
    given to the re-made low-priority pods, and the gang, which follows its
    victims by UID, runs whole once they are gone."""
    total = NODES * CPUS
    create(api, jobs, vcjob("low", total, 1, priority="vc-low"))
    wait_for(lambda: len(bound(api, "low")) == total, timeout=60, message="low fills")
    names = [p["metadata"]["name"] for p in bound(api, "low")]
    try:
        for name in names:
            _hold(api, name, True)
        create(api, jobs, vcjob("high", 3, 3, priority="vc-high"))

        def terminating() -> list[dict[str, Any]]:
            return [
                p
                for p in api.list("Pod", "default").items
                if p["metadata"]["name"].startswith("low-")
                and p["metadata"].get("deletionTimestamp")
            ]

        def placed(name: str) -> bool:
            return bool(api.get("Pod", name, "default")["spec"].get("nodeName"))

        wait_for(lambda: len(terminating()) == 3, timeout=60, message="three victims evicted")
        for i, victim in enumerate(terminating()):
            name, uid = victim["metadata"]["name"], victim["metadata"]["uid"]
            _hold(api, name, False)

            def made_again(name: str = name, uid: str = uid) -> bool:
                try:
                    return bool(api.get("Pod", name, "default")["metadata"]["uid"] != uid)
                except NotFound:
                    return False

            wait_for(made_again, timeout=30, message=f"{name} made again")
            mark = {**low_pod(1000 + i), "metadata": {"name": f"mark-{i}", "namespace": "default"}}
            mark["spec"]["containers"][0]["resources"] = {}
            api.create("Pod", mark, "default")
            wait_for(functools.partial(placed, f"mark-{i}"), timeout=30, message="a session after")
        wait_for(lambda: len(bound(api, "high")) == 3, timeout=30, message="high placed")
        assert len(bound(api, "low")) == total - 3
    finally:
        for name in names:
            _hold(api, name, False)


def test_backfill_places_best_effort_pods_on_a_full_cluster(
    api: GrpcApiClient, jobs: list[str]
) -> None:
    create(api, jobs, vcjob("full", NODES * CPUS, NODES * CPUS))
    wait_for(lambda: len(bound(api, "full")) == NODES * CPUS, timeout=60, message="full")
    create(api, jobs, vcjob("be", 3, 3, cpu=None))
    wait_for(lambda: len(bound(api, "be")) == 3, timeout=60, message="best-effort placed")


def test_binpack_fills_one_node_first(api: GrpcApiClient, jobs: list[str]) -> None:
    for i in range(CPUS):  # one at a time: each sees the last one's node in use
        create(api, jobs, vcjob(f"bp-{i}", 1, 1))
        wait_for(lambda i=i: len(bound(api, "bp-")) == i + 1, timeout=30)  # type: ignore[misc]
    assert len({p["spec"]["nodeName"] for p in bound(api, "bp-")}) == 1


def test_drf_gives_the_job_with_the_smaller_dominant_share_the_room(
    api: GrpcApiClient, queues: list[str], jobs: list[str]
) -> None:
    """Two elastic jobs wait in their own queue while a gang fills the
    cluster: `fat` tasks take 2 cpus (1/16 of the cluster, their dominant
    share), `thin` ones 1 cpu (1/32). Both are Inqueue before the gang goes
    (an idle queue takes its first job whatever its size, and the second fits
    its deserved half). As the room frees, the job with the smaller dominant
    share takes each place, so fat ends near 8 tasks and thin near 16; in
    arrival order fat, the older, would take all 32 cpus with its 16.
    (The jobs wait in a queue of their own so that both are admitted while
    the cluster is full: in the gang's queue only the oldest would be, and
    would take the room as it frees, before the other is admitted.)"""
    api.create("Queue", {"metadata": {"name": "qdrf"}, "spec": {"weight": 1}})
    queues.append("qdrf")
    create(api, jobs, vcjob("block", NODES * CPUS, NODES * CPUS))
    wait_for(lambda: len(bound(api, "block")) == NODES * CPUS, timeout=60, message="blocked")
    create(api, jobs, vcjob("fat", 40, 1, queue="qdrf", cpu="2"))
    create(api, jobs, vcjob("thin", 40, 1, queue="qdrf"))

    def admitted() -> bool:
        pods = [
            p
            for p in api.list("Pod", "default").items
            if (p["metadata"].get("labels") or {}).get(volcano.JOB_NAME) in ("fat", "thin")
        ]
        groups = [
            (g.get("status") or {}).get("phase")
            for g in api.list("PodGroup", "default").items
            if g["spec"].get("queue") == "qdrf"
        ]
        return len(pods) == 80 and groups == ["Inqueue", "Inqueue"]

    wait_for(admitted, timeout=60, interval=0.2, message="fat and thin Inqueue, their pods made")
    api.delete(volcano.JOB_KEY, "block", "default")
    seen: list[tuple[int, int]] = []

    def taken() -> bool:
        fat, thin = len(bound(api, "fat")), len(bound(api, "thin"))
        seen.append((fat, thin))
        return 2 * fat + thin == NODES * CPUS

    try:
        wait_for(taken, timeout=60, interval=0.5, message="the room taken again")
    finally:
        print("bound (fat, thin):", seen[::10], seen[-1:])
    fat, thin = seen[-1]
    # Fat takes a place only while its share is at most thin's (fat/16 <= thin/32).
    assert fat <= 9 and thin >= 14, (fat, thin)
