"""What the ports of Volcano's e2e suites share: a control plane with Volcano's
CI scheduler configuration, hollow nodes sized for the suites' arithmetic,
and the helpers of Volcano's test/e2e/util they use.

The control plane runs in this process (SQLite in a temp dir) with every
controller but podgc; the batch scheduler reads `VOLCANO_CI_CONF` as it
stands (its `network-topology-aware` plugin is skipped with a warning).
`NODES` hollow nodes of `CPUS` cpus make `SLOTS` one-cpu slots: Volcano's
`ClusterSize(ctx, OneCPU)`. Hollow nodes report a bound pod Running and
finish a deleted one; what a real container would do besides (fail with an
exit code, restart, succeed) a test writes into the pod's status itself,
as the agent would.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent.hollow import HollowConfig, HollowNodes
from controlplane import main as cp_main
from controlplane.api import volcano
from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.errors import NotFound
from controlplane.client.informer import SharedInformerFactory
from tests.fakes.volcano_examples import VOLCANO_CI_CONF
from tests.harness.hollow import wait_schedulable
from tests.harness.wait import wait_for

NODES, CPUS = 4, 2
SLOTS = NODES * CPUS  # Volcano's ClusterSize(ctx, OneCPU)
NS = "default"
Obj = dict[str, Any]


class JobPhases:
    """Every phase each Volcano Job went through, as its informer saw it
    (Volcano's WaitJobPhases watches for the same sequence)."""

    def __init__(self, api: GrpcApiClient) -> None:
        self.factory = SharedInformerFactory(api)
        self.lock = threading.Lock()
        self.seen: dict[str, list[str]] = {}
        informer = self.factory.informer_for(volcano.JOB_KEY)
        informer.add_event_handler(self._on, lambda _old, new: self._on(new))

    def _on(self, job: Obj) -> None:
        phase = ((job.get("status") or {}).get("state") or {}).get("phase") or "Pending"
        with self.lock:
            seen = self.seen.setdefault(job["metadata"]["uid"], [])
            if not seen or seen[-1] != phase:
                seen.append(phase)

    def of(self, api: GrpcApiClient, name: str) -> list[str]:
        uid = api.get(volcano.JOB_KEY, name, NS)["metadata"]["uid"]
        with self.lock:
            return list(self.seen.get(uid, []))

    def wait(self, api: GrpcApiClient, name: str, phases: list[str], timeout: float = 60) -> None:
        """The job passes through `phases` in this order (others may come between)."""

        def passed() -> bool:
            it = iter(self.of(api, name))
            return all(p in it for p in phases)

        wait_for(passed, timeout=timeout, interval=0.1,
                 message=f"job {name} through {phases}: saw {self.of(api, name)}")  # fmt: skip


@dataclass
class Cluster:
    api: GrpcApiClient
    nodes: HollowNodes
    phases: JobPhases
    jobs: list[str] = field(default_factory=list)


def start(base: Path, conf: str = VOLCANO_CI_CONF) -> Iterator[Cluster]:
    path = base / "volcano-scheduler.conf"
    path.write_text(conf)
    mp = pytest.MonkeyPatch()
    from controlplane.scheduler.batch import run as batch_run

    mp.setenv(batch_run.CONFIG_ENV, str(path))
    args = cp_main.build_parser().parse_args(
        ["--listen", "127.0.0.1:0", "--data-dir", str(base / "cp"), "--controllers", "*,-podgc"]
    )
    running = cp_main.start(args)
    api = connect(running.admin, timeout=30)
    nodes = HollowNodes(api, HollowConfig(nodes=NODES, cpu=str(CPUS), memory="8Gi", prefix="ve"))
    phases = JobPhases(api)
    try:
        nodes.start()
        phases.factory.start()
        wait_schedulable(api, NODES)
        for name, value in (("low-priority", 10), ("high-priority", 10000)):
            api.create("PriorityClass", {"metadata": {"name": name}, "value": value})
        yield Cluster(api, nodes, phases)
    finally:
        phases.factory.shutdown()
        nodes.stop()
        api.close()
        running.stop()
        mp.undo()


@dataclass
class Task:
    """Volcano's e2eutil.TaskSpec: `min` adds to the job's minAvailable;
    `min_available` is the task's own (unset: its replicas, as Volcano's
    webhook defaults it)."""

    name: str
    rep: int
    min: int = 0
    cpu: str | None = "1"
    min_available: int | None = None
    restart_policy: str = "OnFailure"
    policies: list[Obj] | None = None
    max_retry: int | None = None
    node: str = ""  # required node affinity to this hostname
    priority: str = ""


def job(
    name: str, tasks: list[Task], min_available: int | None = None, queue: str = "default",
    policies: list[Obj] | None = None, max_retry: int | None = None,
    min_success: int | None = None, priority: str = "", annotations: dict[str, str] | None = None,
) -> Obj:  # fmt: skip
    """A Volcano Job as e2eutil.CreateJobInner builds one."""
    spec_tasks = []
    for t in tasks:
        container: Obj = {"name": "c", "image": "busybox"}
        if t.cpu is not None:
            container["resources"] = {"requests": {"cpu": t.cpu}, "limits": {"cpu": t.cpu}}
        pod_spec: Obj = {
            "schedulerName": "volcano", "restartPolicy": t.restart_policy,
            "containers": [container], "terminationGracePeriodSeconds": 3,
        }  # fmt: skip
        if t.priority:
            pod_spec["priorityClassName"] = t.priority
        if t.node:
            pod_spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{
                    "key": "kubernetes.io/hostname", "operator": "In", "values": [t.node]}]}]}}}  # fmt: skip
        task: Obj = {"name": t.name, "replicas": t.rep, "template": {"spec": pod_spec}}
        if t.min_available is not None:
            task["minAvailable"] = t.min_available
        if t.policies:
            task["policies"] = t.policies
        if t.max_retry is not None:
            task["maxRetry"] = t.max_retry
        spec_tasks.append(task)
    spec: Obj = {
        "schedulerName": "volcano", "queue": queue, "tasks": spec_tasks,
        "minAvailable": min_available if min_available is not None else sum(t.min for t in tasks),
    }  # fmt: skip
    if policies:
        spec["policies"] = policies
    if max_retry is not None:
        spec["maxRetry"] = max_retry
    if min_success is not None:
        spec["minSuccess"] = min_success
    if priority:
        spec["priorityClassName"] = priority
    meta: Obj = {"name": name, "namespace": NS}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": volcano.BATCH_API, "kind": "Job", "metadata": meta, "spec": spec}


def create(c: Cluster, obj: Obj) -> Obj:
    created = c.api.create(volcano.JOB_KEY, obj, NS)
    c.jobs.append(obj["metadata"]["name"])
    return created


def cleanup(c: Cluster) -> None:
    """Delete the test's Jobs and wait for their pods to go."""
    for name in c.jobs:
        try:
            c.api.delete(volcano.JOB_KEY, name, NS)
        except NotFound:
            pass
    names = list(c.jobs)
    c.jobs.clear()
    wait_for(lambda: not [p for n in names for p in pods_of(c.api, n)], timeout=60,
             message=f"pods of {names} gone")  # fmt: skip


def pods_of(api: GrpcApiClient, name: str, task: str = "") -> list[Obj]:
    return [
        p for p in api.list("Pod", NS).items
        if (p["metadata"].get("labels") or {}).get(volcano.JOB_NAME) == name
        and (not task or (p["metadata"].get("labels") or {}).get(volcano.TASK_SPEC) == task)
    ]  # fmt: skip


def running(api: GrpcApiClient, name: str) -> int:
    """Pods of the job bound and Running, not being deleted (Volcano's tasks ready)."""
    return sum(
        1 for p in pods_of(api, name)
        if (p.get("status") or {}).get("phase") == "Running"
        and not p["metadata"].get("deletionTimestamp")
    )  # fmt: skip


def phase(api: GrpcApiClient, name: str) -> str:
    status = api.get(volcano.JOB_KEY, name, NS).get("status") or {}
    return str((status.get("state") or {}).get("phase") or "Pending")


def group_of(api: GrpcApiClient, name: str) -> Obj:
    j = api.get(volcano.JOB_KEY, name, NS)
    return api.get("PodGroup", f"{name}-{j['metadata']['uid']}", NS)


def events(api: GrpcApiClient, kind: str, name: str, reason: str) -> list[Obj]:
    return [
        e for e in api.list("Event", NS).items
        if e["involvedObject"].get("kind") == kind
        and str(e["involvedObject"].get("name", "")).startswith(name)
        and e.get("reason") == reason
    ]  # fmt: skip


def set_pod_status(api: GrpcApiClient, pod: str, phase: str, exit_code: int | None = None,
                   restarts: int = 0) -> None:  # fmt: skip
    """Write the pod's status as its agent would: its phase, the container's
    restart count, and how it ended."""
    state: Obj = {"running": {}}
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "reason": "Error" if exit_code else
                                "Completed"}}  # fmt: skip
    status = {
        "phase": phase,
        "containerStatuses": [{"name": "c", "image": "busybox", "imageID": "", "ready": False,
                               "restartCount": restarts, "state": state}],
    }  # fmt: skip
    api.patch("Pod", pod, {"status": status}, NS, "status")
