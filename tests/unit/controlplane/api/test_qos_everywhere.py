"""The QoS class comes from one function everywhere (issue 20): admission's
status.qosClass, the scheduler's BestEffort (MemoryPressure) and the agent's
cgroup parent agree, and only cpu and memory count, as in Kubernetes."""

from __future__ import annotations

from typing import Any, cast

import pytest

from agent.pod_config import pod_cgroup_parent
from controlplane.api.kinds.core.pod import admit as admit_pod
from controlplane.api.qos import QOSClass, qos_class
from controlplane.scheduler.podinfo import PodInfo


def pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", **c} for i, c in enumerate(containers)]
    }
    if init:
        spec["initContainers"] = [{"name": f"i{i}", **c} for i, c in enumerate(init)]
    return {"metadata": {"name": "p", "namespace": "default", "uid": "u1"}, "spec": spec}


def res(
    requests: dict[str, str] | None = None, limits: dict[str, str] | None = None
) -> dict[str, Any]:
    r: dict[str, Any] = {}
    if requests:
        r["requests"] = requests
    if limits:
        r["limits"] = limits
    return {"resources": r}


class NoPriorityClasses:
    def cached_objects(self, kind: str) -> list[dict[str, Any]]:
        return []


FULL = {"cpu": "500m", "memory": "128Mi"}

CASES = [
    ("nothing", pod({}), QOSClass.BEST_EFFORT),
    # Kubernetes counts only cpu and memory: these stay BestEffort (admission
    # and the scheduler used to call them Burstable).
    ("ephemeral-storage only", pod(res({"ephemeral-storage": "1Gi"})), QOSClass.BEST_EFFORT),
    ("extended resource only", pod(res(limits={"example.com/gpu": "1"})), QOSClass.BEST_EFFORT),
    ("limits = requests", pod(res(FULL, FULL)), QOSClass.GUARANTEED),
    ("limits only (requests default to them)", pod(res(limits=FULL)), QOSClass.GUARANTEED),
    (
        "1000m equals 1",
        pod(res({"cpu": "1000m", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})),
        QOSClass.GUARANTEED,
    ),
    ("request below limit", pod(res({"cpu": "100m", "memory": "128Mi"}, FULL)), QOSClass.BURSTABLE),
    ("cpu only", pod(res({"cpu": "100m"})), QOSClass.BURSTABLE),
    ("one of two containers", pod(res(FULL, FULL), {}), QOSClass.BURSTABLE),
    ("init container without limits", pod(res(FULL, FULL), init=({},)), QOSClass.BURSTABLE),
    (
        "init container guaranteed too",
        pod(res(FULL, FULL), init=(res(FULL, FULL),)),
        QOSClass.GUARANTEED,
    ),
]


@pytest.mark.parametrize(("name", "obj", "want"), CASES, ids=[c[0] for c in CASES])
def test_every_part_agrees(name: str, obj: dict[str, Any], want: QOSClass) -> None:
    assert qos_class(obj) == want
    admitted = {**obj, "spec": dict(obj["spec"])}
    admit_pod(cast(Any, NoPriorityClasses()), cast(Any, None), admitted, None)
    assert admitted["status"]["qosClass"] == want.value
    assert PodInfo.of(obj).best_effort == (want == QOSClass.BEST_EFFORT)
    parent = pod_cgroup_parent(obj, "/kubepods")
    expected = {
        QOSClass.GUARANTEED: "/kubepods/podu1",
        QOSClass.BURSTABLE: "/kubepods/burstable/podu1",
        QOSClass.BEST_EFFORT: "/kubepods/besteffort/podu1",
    }[want]
    assert parent == expected


def test_a_bad_quantity_is_never_guaranteed() -> None:
    obj = pod(res({"cpu": "x", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}))
    assert qos_class(obj) == QOSClass.BURSTABLE
