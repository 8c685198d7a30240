"""A Deployment's status from its ReplicaSets (pure, as Kubernetes'
deployment/util computes it).

Replica counts summed over the ReplicaSets; `Available` from minimum
availability (desired minus maxUnavailable); `Progressing` through its
reasons: DeploymentPaused, NewReplicaSetAvailable once the new ReplicaSet
has every replica available, ReplicaSetUpdated while the rollout moves, and
ProgressDeadlineExceeded once nothing moved for progressDeadlineSeconds.
The caller writes the status, records the event the plan asks for and
requeues after `requeue` seconds; nothing here performs I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controlplane.controllers import podutil, rollout
from machinery import rfc3339

Object = dict[str, Any]


@dataclass(frozen=True)
class StatusPlan:
    status: dict[str, Any]
    requeue: float | None  # seconds until the progress deadline must be checked again
    deadline_exceeded: bool  # Progressing just became ProgressDeadlineExceeded


def _count(obj: Mapping[str, Any] | None, field: str) -> int:
    return int(podutil.status(obj).get(field) or 0) if obj is not None else 0


def _moved(old: Mapping[str, Any], total: int, updated: int, ready: int, available: int) -> bool:
    """Whether the rollout made progress since the status `old` was written."""
    old_updated = int(old.get("updatedReplicas") or 0)
    return (
        updated > old_updated
        or available > int(old.get("availableReplicas") or 0)
        or ready > int(old.get("readyReplicas") or 0)
        or total - updated < int(old.get("replicas") or 0) - old_updated
    )


def plan_status(
    d: Mapping[str, Any],
    rss: Sequence[Mapping[str, Any]],
    new: Mapping[str, Any] | None,
    now: float,
) -> StatusPlan:
    """The status Deployment `d` should have, given its ReplicaSets `rss`
    (the new one, `new`, among them) at time `now`."""
    spec = podutil.spec(d)
    want = int(spec.get("replicas", 1))
    _, _, unavailable = rollout.strategy_params(d)
    old_status = dict(podutil.status(d))
    total = sum(_count(r, "replicas") for r in rss)
    ready = sum(_count(r, "readyReplicas") for r in rss)
    available = sum(_count(r, "availableReplicas") for r in rss)
    updated = _count(new, "replicas")
    st: dict[str, Any] = dict(old_status)
    st.update(
        {
            "observedGeneration": podutil.meta(d).get("generation", 0),
            "replicas": total,
            "updatedReplicas": updated,
            "readyReplicas": ready,
            "availableReplicas": available,
            "unavailableReplicas": max(0, want - available),
        }
    )

    def setc(conds: Any, kind: str, status: str, reason: str, message: str) -> Any:
        return podutil.set_condition(conds, kind, status, reason, message, now, True)

    conds = old_status.get("conditions")
    if available >= want - unavailable:
        conds = setc(conds, "Available", "True", "MinimumReplicasAvailable",
                     "Deployment has minimum availability.")  # fmt: skip
    else:
        conds = setc(conds, "Available", "False", "MinimumReplicasUnavailable",
                     "Deployment does not have minimum availability.")  # fmt: skip
    requeue: float | None = None
    exceeded = False
    deadline = spec.get("progressDeadlineSeconds")
    progressing = next((c for c in conds or [] if c.get("type") == "Progressing"), None)
    new_name = podutil.name_of(new) if new is not None else ""
    if spec.get("paused"):
        conds = setc(conds, "Progressing", "Unknown", "DeploymentPaused", "Deployment is paused")
    elif new is not None and updated == want == available == total == _count(
        new, "availableReplicas"
    ):
        if progressing is None or progressing.get("reason") != "NewReplicaSetAvailable":
            conds = setc(conds, "Progressing", "True", "NewReplicaSetAvailable",
                         f'ReplicaSet "{new_name}" has successfully progressed.')  # fmt: skip
    elif new is not None:
        moved = _moved(old_status, total, updated, ready, available)
        reason = progressing.get("reason") if progressing is not None else None
        if reason == "ProgressDeadlineExceeded" and not moved:
            pass
        elif (
            moved
            or progressing is None
            or reason in ("NewReplicaSetAvailable", "DeploymentPaused", "DeploymentResumed")
        ):
            conds = setc(conds, "Progressing", "True", "ReplicaSetUpdated",
                         f'ReplicaSet "{new_name}" is progressing.')  # fmt: skip
        elif deadline is not None and progressing is not None:
            last = rfc3339.parse_time(progressing.get("lastUpdateTime")) or now
            if last + int(deadline) <= now:
                if reason != "ProgressDeadlineExceeded":
                    conds = setc(conds, "Progressing", "False", "ProgressDeadlineExceeded",
                                 f'ReplicaSet "{new_name}" has timed out progressing.')  # fmt: skip
                    exceeded = True
            else:
                requeue = last + int(deadline) - now + 1
        if requeue is None and deadline is not None:
            current = next((c for c in conds or [] if c.get("type") == "Progressing"), None)
            if current is not None and current.get("reason") != "ProgressDeadlineExceeded":
                last = rfc3339.parse_time(current.get("lastUpdateTime")) or now
                requeue = max(1.0, last + int(deadline) - now + 1)
    st["conditions"] = conds
    return StatusPlan(st, requeue, exceeded)
