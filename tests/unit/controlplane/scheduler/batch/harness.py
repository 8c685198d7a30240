"""A batch scheduler over an in-memory cluster: binds land at once, evictions delete."""

from __future__ import annotations

import copy
from typing import Any

from controlplane.api import volcano
from controlplane.scheduler.batch import conf as batch_conf
from controlplane.scheduler.batch.scheduler import BatchScheduler
from machinery.clock import Clock, FakeClock
from tests.fakes.scheduler_objects import make_node, make_pod

Obj = dict[str, Any]


def _stamp(n: int) -> str:
    return f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}Z"


class Cluster:
    """The writer: applies binds and evictions and feeds them back as events."""

    def __init__(self) -> None:
        self.sched: BatchScheduler | None = None
        self.pods: dict[str, Obj] = {}
        self.statuses: dict[tuple[str, str], Obj] = {}
        self.evicted: list[str] = []
        self.events: list[
            tuple[str, str, str, str, str]
        ] = []  # (kind, name, type, reason, message)
        # Graceful: an evicted pod terminates (deletionTimestamp) until `finish`.
        self.graceful = False

    def bind_many(
        self, items: list[tuple[Obj, str, dict[str, str] | None]]
    ) -> list[Exception | None]:
        assert self.sched is not None
        for pod, node, _ in items:
            bound = copy.deepcopy(pod)
            bound["spec"]["nodeName"] = node
            bound["status"] = {"phase": "Running"}
            key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
            self.pods[key] = bound
            self.sched.cache.on_pod(bound)
        return [None] * len(items)

    def evict(self, pod: Obj, grace_seconds: int) -> None:
        assert self.sched is not None
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        self.evicted.append(key)
        if self.graceful:
            going = copy.deepcopy(self.pods[key])
            going["metadata"]["deletionTimestamp"] = "2026-01-01T01:00:00Z"
            self.pods[key] = going
            self.sched.cache.on_pod(going)
            return
        self.pods.pop(key, None)
        self.sched.cache.on_pod(pod, deleted=True)

    def finish(self, key: str, recreate: bool = False) -> None:
        """A terminating pod is gone; `recreate`: its controller makes it again
        under the same name (a new UID, pending)."""
        assert self.sched is not None
        pod = self.pods.pop(key)
        self.sched.cache.on_pod(pod, deleted=True)
        if recreate:
            again = copy.deepcopy(pod)
            again["metadata"].pop("deletionTimestamp", None)
            again["metadata"]["uid"] += "-again"
            again["spec"].pop("nodeName", None)
            again["status"] = {}
            self.sched.cache.on_pod(again)

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        self.events.append((obj.get("kind", ""), obj["metadata"]["name"], type_, reason, message))

    def write_status(self, kind: str, obj: Obj, status: Obj) -> None:
        assert self.sched is not None
        self.statuses[(kind, obj["metadata"]["name"])] = status
        new = {**obj, "status": {**(obj.get("status") or {}), **status}}
        if kind == "PodGroup":
            self.sched.cache.on_pod_group(new)
        else:
            self.sched.cache.on_queue(new)


class Env:
    def __init__(
        self,
        conf_text: str = batch_conf.DEFAULT_CONF,
        clock: Clock | None = None,
        background_binds: bool = False,
    ) -> None:
        self.cluster = Cluster()
        self.sched = BatchScheduler(
            batch_conf.load(conf_text), self.cluster, clock=clock or FakeClock(),
            background_binds=background_binds,
        )  # fmt: skip
        self.cluster.sched = self.sched
        self.queue("default")

    def nodes(self, n: int, cpu: str = "4", memory: str = "8Gi") -> None:
        for i in range(n):
            self.sched.cache.on_node(make_node(f"n{i}", cpu=cpu, memory=memory))

    def queue(self, name: str, weight: int = 1, **spec: Any) -> None:
        self.sched.cache.on_queue({
            "metadata": {"name": name},
            "spec": {"weight": weight, "reclaimable": True, **spec},
            "status": {"state": "Open"},
        })  # fmt: skip

    def job(self, name: str, tasks: int, cpu: str = "1", min_member: int | None = None,
            queue: str = "default", priority: int = 0, namespace: str = "default",
            best_effort: bool = False, claim: str = "", memory: str | None = None,
            min_task: int | None = None, annotations: dict[str, str] | None = None,
            ) -> None:  # fmt: skip
        """A PodGroup and its pods; `claim`: each pod i mounts the claim `<claim>-<i>`;
        `min_task`: its task's minTaskMember (as Volcano's Job controller sets it)."""
        mm = tasks if min_member is None else min_member
        self.sched.cache.on_pod_group({
            "apiVersion": volcano.SCHEDULING_API, "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace,
                         "creationTimestamp": _stamp(len(self.sched.cache.groups)),
                         "annotations": annotations or {}},
            "spec": {"minMember": mm, "queue": queue,
                     "minResources": {"cpu": str(int(float(cpu) * mm))},
                     **({"minTaskMember": {"t": min_task}} if min_task is not None else {})},
            "status": {"phase": "Pending"},
        })  # fmt: skip
        for i in range(tasks):
            pod = make_pod(
                f"{name}-t-{i}", cpu=None if best_effort else cpu, namespace=namespace,
                memory=None if best_effort else memory,
                scheduler_name="volcano", priority=priority,
                annotations={volcano.GROUP_NAME_ANNOTATION: name, volcano.TASK_SPEC: "t"},
            )  # fmt: skip
            if claim:
                pod["spec"]["volumes"] = [
                    {"name": "data", "persistentVolumeClaim": {"claimName": f"{claim}-{i}"}}
                ]
            self.sched.cache.on_pod(pod)

    def run(self, sessions: int = 3) -> None:
        for _ in range(sessions):
            self.sched.run_session()

    def bound(self, prefix: str = "") -> dict[str, str]:
        return {
            k: p["spec"]["nodeName"]
            for k, p in self.cluster.pods.items()
            if k.split("/", 1)[1].startswith(prefix)
        }

    def group_status(self, name: str) -> Obj:
        return self.cluster.statuses.get(("PodGroup", name), {})
