"""Builders of Kubernetes-shaped Node and Pod dicts for tests, the benchmark and examples.

Only plain data: `make_node("n1", cpu="4", memory="8Gi", labels={...})` and
`make_pod("p", cpu="500m", ...)` return dicts exactly as the API would hold them.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def make_node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    labels: dict[str, str] | None = None,
    taints: list[Obj] | None = None,
    unschedulable: bool = False,
    conditions: dict[str, str] | None = None,
    images: list[tuple[list[str], int]] | None = None,
    extra: dict[str, str] | None = None,
) -> Obj:
    alloc = {
        "cpu": cpu,
        "memory": memory,
        "pods": pods,
        "ephemeral-storage": "100Gi",
        **(extra or {}),
    }
    node: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {},
        "status": {
            "allocatable": alloc,
            "capacity": dict(alloc),
            "conditions": [
                {"type": t, "status": s} for t, s in (conditions or {"Ready": "True"}).items()
            ],
        },
    }
    if taints:
        node["spec"]["taints"] = taints
    if unschedulable:
        node["spec"]["unschedulable"] = True
    if images:
        node["status"]["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    return node


def make_pod(
    name: str,
    cpu: str | None = None,
    memory: str | None = None,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    priority: int | None = None,
    node_name: str | None = None,
    scheduler_name: str | None = None,
    image: str = "busybox:1.36",
    spec: Obj | None = None,
    requests: dict[str, str] | None = None,
    created: str | None = None,
    annotations: dict[str, str] | None = None,
) -> Obj:
    req = dict(requests or {})
    if cpu is not None:
        req["cpu"] = cpu
    if memory is not None:
        req["memory"] = memory
    container: Obj = {"name": "c", "image": image}
    if req:
        container["resources"] = {"requests": req}
    meta: Obj = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    if labels:
        meta["labels"] = labels
    if created:
        meta["creationTimestamp"] = created
    if annotations:
        meta["annotations"] = annotations
    pod_spec: Obj = {"containers": [container]}
    if priority is not None:
        pod_spec["priority"] = priority
    if node_name:
        pod_spec["nodeName"] = node_name
    if scheduler_name:
        pod_spec["schedulerName"] = scheduler_name
    pod_spec.update(spec or {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": pod_spec,
        "status": {"phase": "Pending"},
    }
