"""Deployment status computed from ReplicaSets, without a controller."""

from __future__ import annotations

from typing import Any

from controlplane.controllers.deployment_status import plan_status
from machinery import rfc3339


def deploy(want: int = 3, deadline: int | None = 600, **status: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": want}
    if deadline is not None:
        spec["progressDeadlineSeconds"] = deadline
    return {"metadata": {"name": "web", "generation": 2}, "spec": spec, "status": status}


def rs(name: str, replicas: int, available: int | None = None) -> dict[str, Any]:
    a = replicas if available is None else available
    return {
        "metadata": {"name": name},
        "status": {"replicas": replicas, "readyReplicas": a, "availableReplicas": a},
    }


def cond(plan_conds: Any, kind: str) -> dict[str, Any]:
    return next(c for c in plan_conds if c["type"] == kind)


def test_complete_rollout_is_available_and_progressed() -> None:
    new = rs("web-new", 3)
    plan = plan_status(deploy(), [new, rs("web-old", 0)], new, now=1000.0)
    st = plan.status
    assert (st["replicas"], st["updatedReplicas"], st["availableReplicas"]) == (3, 3, 3)
    assert st["unavailableReplicas"] == 0 and st["observedGeneration"] == 2
    assert cond(st["conditions"], "Available")["status"] == "True"
    assert cond(st["conditions"], "Progressing")["reason"] == "NewReplicaSetAvailable"
    assert not plan.deadline_exceeded


def test_rollout_in_progress_requeues_at_the_deadline() -> None:
    new, old = rs("web-new", 1, available=0), rs("web-old", 3)
    plan = plan_status(deploy(), [new, old], new, now=1000.0)
    progressing = cond(plan.status["conditions"], "Progressing")
    assert progressing["reason"] == "ReplicaSetUpdated"
    assert plan.requeue == 601.0


def test_no_progress_past_the_deadline_is_reported_once() -> None:
    stale = rfc3339.format_time(500)
    d = deploy(
        want=3,
        deadline=10,
        conditions=[{"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
                     "lastUpdateTime": stale, "lastTransitionTime": stale}],
        replicas=4, updatedReplicas=1, readyReplicas=3, availableReplicas=3,
    )  # fmt: skip
    new, old = rs("web-new", 1, available=0), rs("web-old", 3)
    plan = plan_status(d, [new, old], new, now=1000.0)
    assert plan.deadline_exceeded
    assert cond(plan.status["conditions"], "Progressing")["reason"] == "ProgressDeadlineExceeded"
    again = plan_status({**d, "status": plan.status}, [new, old], new, now=1001.0)
    assert not again.deadline_exceeded  # the event is recorded once


def test_paused_deployment() -> None:
    d = deploy()
    d["spec"]["paused"] = True
    new = rs("web-new", 1, available=0)
    plan = plan_status(d, [new], new, now=5.0)
    assert cond(plan.status["conditions"], "Progressing")["reason"] == "DeploymentPaused"
    assert cond(plan.status["conditions"], "Available")["status"] == "False"
