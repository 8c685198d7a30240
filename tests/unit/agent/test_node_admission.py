"""Node admission at the agent (issue 20): a pod that does not fit is
rejected with the kubelet's reason."""

from __future__ import annotations

from typing import Any

import pytest

from agent.admission import admit, pod_requests

NODE = {
    "status": {"allocatable": {"cpu": "2", "memory": "1Gi", "pods": "3"}},
    "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoExecute"},
                        {"key": "soft", "effect": "NoSchedule"}]},
}  # fmt: skip
TOLERATE = [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoExecute"}]


def pod(
    cpu: str = "",
    memory: str = "",
    ports: tuple[int, ...] = (),
    tolerate: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    container: dict[str, Any] = {"name": "c", "resources": {"requests": requests}}
    if ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in ports]
    spec: dict[str, Any] = {"containers": [container], **extra}
    if tolerate:
        spec["tolerations"] = TOLERATE
    return {"metadata": {"name": "p"}, "spec": spec}


@pytest.mark.parametrize(
    ("new", "running", "reason"),
    [
        (pod(cpu="1"), [pod(cpu="500m")], None),
        (pod(cpu="1600m"), [pod(cpu="500m")], "OutOfcpu"),
        (pod(memory="600Mi"), [pod(memory="500Mi")], "OutOfmemory"),
        (pod(), [pod(), pod(), pod()], "OutOfpods"),
        (pod(ports=(8080,)), [pod(ports=(8080,))], "NodePorts"),
        (pod(ports=(8081,)), [pod(ports=(8080,))], None),
        (pod(tolerate=False), [], "Taint"),  # the NoExecute taint; NoSchedule is not checked
        # The largest init container counts when it is larger than the sum.
        (
            pod(
                cpu="100m",
                initContainers=[{"name": "i", "resources": {"requests": {"cpu": "1900m"}}}],
            ),
            [pod(cpu="200m")],
            "OutOfcpu",
        ),
    ],
)
def test_admission(new: dict[str, Any], running: list[dict[str, Any]], reason: str | None) -> None:
    got = admit(new, NODE, running)
    assert (got.reason if got else None) == reason
    if got is not None:
        assert got.message


def test_effective_requests() -> None:
    p = pod(cpu="100m", memory="64Mi", overhead={"cpu": "10m"})
    assert pod_requests(p) == {"cpu": pytest.approx(0.11), "memory": 64 << 20}
