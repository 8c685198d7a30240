"""Volcano's pg-controller: a PodGroup for a plain pod (or workload) that asks for
`schedulerName: volcano` without naming one.

For such a pod, a PodGroup `podgroup-<uid>` (the uid of the pod's controller,
a ReplicaSet say, so all its pods share one, or of the pod itself) with
minMember 1, the pod's queue (annotation `scheduling.volcano.sh/queue-name`,
else `default`), its priorityClassName and its requests as minResources,
owned by the same owner; then the pod is annotated with
`scheduling.k8s.io/group-name` so the batch scheduler takes it.

A ReplicaSet or StatefulSet scaled to zero has its PodGroup deleted, as
Volcano's pg-controller does: when a Deployment rolls to a new ReplicaSet,
the old one's group goes with its last pod.
"""

from __future__ import annotations

from typing import Any

from controlplane.api import volcano
from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.controllers import podutil
from controlplane.controllers.base import Controller, ControllerContext
from controlplane.scheduler import resources

QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
SCALED = ("ReplicaSet", "StatefulSet")  # workloads whose scale-down to zero ends their group


def _wants_group(pod: Object) -> bool:
    spec = podutil.spec(pod)
    return (
        spec.get("schedulerName") == volcano.SCHEDULER_NAME
        and not spec.get("nodeName")
        and not podutil.is_deleting(pod)
        and volcano.GROUP_NAME_ANNOTATION not in podutil.annotations_of(pod)
    )


def group_for(pod: Object) -> Object:
    ref = podutil.controller_ref(pod)
    owner: dict[str, Any] = (
        dict(ref) if ref is not None else podutil.owner_ref(pod, controller=False)
    )
    uid = str(owner.get("uid") or podutil.uid_of(pod))
    requests = resources.pod_requests(pod)
    min_resources = {
        k: (f"{v}m" if k == resources.CPU else str(v))
        for k, v in requests.items()
        if k in (resources.CPU, resources.MEMORY)
    }
    spec: Object = {
        "minMember": 1,
        "queue": podutil.annotations_of(pod).get(QUEUE_ANNOTATION) or volcano.DEFAULT_QUEUE,
        "minResources": min_resources,
    }
    pcn = podutil.spec(pod).get("priorityClassName")
    if pcn:
        spec["priorityClassName"] = pcn
    return {
        "apiVersion": volcano.SCHEDULING_API,
        "kind": "PodGroup",
        "metadata": {
            "name": f"podgroup-{uid}",
            "namespace": podutil.namespace_of(pod),
            "ownerReferences": [{**owner, "controller": False, "blockOwnerDeletion": False}],
        },
        "spec": spec,
    }


class PodGroupController(Controller):
    name = "volcano-podgroup"
    default_workers = 2

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.pods = self.watch("Pod")
        self.follow(self.pods, self._maybe)
        self.groups = self.watch("PodGroup")
        for kind in SCALED:
            self.follow(self.watch(kind), self._scaled)

    def _scaled(self, owner: Object) -> None:
        """A workload at zero replicas: its PodGroup goes."""
        name, ns = f"podgroup-{podutil.uid_of(owner)}", podutil.namespace_of(owner)
        if podutil.spec(owner).get("replicas") != 0 or self.groups.store.get(name, ns) is None:
            return
        try:
            self.client.delete("PodGroup", name, ns)
        except errors.NotFound:
            pass

    def _maybe(self, pod: Object) -> None:
        if _wants_group(pod):
            self.enqueue(pod)

    def sync(self, key: str) -> float | None:
        pod = self.pods.store.get_by_key(key)
        if pod is None or not _wants_group(pod):
            return None
        group = group_for(pod)
        name = group["metadata"]["name"]
        try:
            self.client.create("PodGroup", group, podutil.namespace_of(pod))
        except errors.AlreadyExists:
            pass
        try:
            self.client.patch(
                "Pod",
                podutil.name_of(pod),
                {"metadata": {"annotations": {volcano.GROUP_NAME_ANNOTATION: name}}},
                podutil.namespace_of(pod),
            )
        except errors.NotFound:
            pass
        return None


def init(ctx: ControllerContext) -> Controller:
    return PodGroupController(ctx)
