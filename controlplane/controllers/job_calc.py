"""A Job's decisions, as Kubernetes' job controller makes them (pure).

`plan_job()` takes the Job's spec and what its pods say (active, succeeded,
failed, the last failure time, when it started) and returns what to do: how
many pods to create or delete, whether and why the Job finished (Complete,
Failed with BackoffLimitExceeded or DeadlineExceeded), when to look again
(creation backoff, deadline), and, for finished Jobs with
ttlSecondsAfterFinished, when to delete the Job. Pod-creation backoff after
failures is 10 s doubled per failure, capped at 6 minutes. No I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_BACKOFF_LIMIT = 6
BACKOFF_BASE = 10.0
BACKOFF_CAP = 360.0


@dataclass(frozen=True)
class JobCounts:
    active: int
    succeeded: int
    failed: int
    last_failure: float | None = None  # when the most recent pod failed


@dataclass(frozen=True)
class JobPlan:
    create: int = 0
    delete: int = 0  # active pods to delete (all of them on failure)
    finished: str = ""  # "", "Complete" or "Failed"
    reason: str = ""
    message: str = ""
    requeue_after: float | None = None  # look again (backoff, deadline, ttl)
    delete_job: bool = False  # ttlSecondsAfterFinished has passed


def backoff_delay(failures: int) -> float:
    if failures <= 0:
        return 0.0
    return float(min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (failures - 1)))


def _int(value: Any, default: int | None) -> int | None:
    if value is None:
        return default
    return int(value)


def plan_job(
    spec: Mapping[str, Any],
    counts: JobCounts,
    start_time: float | None,
    now: float,
    finished_at: float | None = None,
    finished: str = "",
) -> JobPlan:
    """What the job controller should do now."""
    ttl = _int(spec.get("ttlSecondsAfterFinished"), None)
    if finished:
        if ttl is None:
            return JobPlan(finished=finished)
        expires = (finished_at or now) + ttl
        if expires <= now:
            return JobPlan(finished=finished, delete_job=True)
        return JobPlan(finished=finished, requeue_after=expires - now)

    parallelism = _int(spec.get("parallelism"), 1) or 0
    completions = _int(spec.get("completions"), None)
    backoff_limit = _int(spec.get("backoffLimit"), DEFAULT_BACKOFF_LIMIT) or 0
    deadline = _int(spec.get("activeDeadlineSeconds"), None)
    suspended = bool(spec.get("suspend"))

    if counts.failed > backoff_limit:
        return JobPlan(
            delete=counts.active,
            finished="Failed",
            reason="BackoffLimitExceeded",
            message="Job has reached the specified backoff limit",
        )
    if deadline is not None and start_time is not None and start_time + deadline <= now:
        return JobPlan(
            delete=counts.active,
            finished="Failed",
            reason="DeadlineExceeded",
            message="Job was active longer than specified deadline",
        )

    if completions is None:
        complete = counts.succeeded > 0 and counts.active == 0
    else:
        complete = counts.succeeded >= completions
    if complete:
        return JobPlan(delete=counts.active, finished="Complete", reason="Completed")

    if suspended:
        want = 0
    elif completions is None:
        want = counts.active if counts.succeeded > 0 else parallelism
    else:
        want = max(0, min(completions - counts.succeeded, parallelism))

    requeue: float | None = None
    if deadline is not None and start_time is not None:
        requeue = start_time + deadline - now
    if counts.active > want:
        return JobPlan(delete=counts.active - want, requeue_after=requeue)
    create = want - counts.active
    if create > 0 and counts.failed > 0 and counts.last_failure is not None:
        ready_at = counts.last_failure + backoff_delay(counts.failed)
        if ready_at > now:
            wait = ready_at - now
            return JobPlan(requeue_after=wait if requeue is None else min(wait, requeue))
    return JobPlan(create=create, requeue_after=requeue)
