"""The Job controller: run pods until enough succeed, or give up.

Counts the Job's pods (active, succeeded, failed; for restartPolicy
OnFailure container restarts count as failures), asks `job_calc.plan_job`
what to do, and does it: create pods (slow-start, expectations, creation
backoff after failures), delete surplus or all active pods when the Job
fails (BackoffLimitExceeded, DeadlineExceeded), set startTime,
completionTime, counts and the Complete/Failed conditions, and delete the
Job when ttlSecondsAfterFinished has passed. Without a selector, pods are
labelled and selected by `controller-uid`/`job-name`. Time comes from the
injected clock; deadlines and backoffs re-queue the Job instead of sleeping.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from controlplane.client import errors
from controlplane.client.interface import ApiClient, DeleteOptions, Object
from controlplane.controllers import job_calc, podutil, ranking
from controlplane.controllers.base import Controller, ControllerContext
from controlplane.controllers.replicaset import PodOwnerController, pod_from_template
from machinery import rfc3339

CONTROLLER_UID_LABEL = "controller-uid"
JOB_NAME_LABEL = "job-name"


def job_selector(job: Object) -> Object:
    sel = podutil.spec(job).get("selector")
    if sel:
        return dict(sel)
    return {"matchLabels": {CONTROLLER_UID_LABEL: podutil.uid_of(job)}}


def delete_job(client: ApiClient, job: Object) -> None:
    """Delete a Job and, in the background, its pods; one already gone is fine."""
    try:
        client.delete(
            "Job",
            podutil.name_of(job),
            podutil.namespace_of(job),
            DeleteOptions(propagation_policy="Background"),
        )
    except errors.NotFound:
        pass


def finished_condition(job: Object) -> tuple[str, float | None]:
    for c in podutil.status(job).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return str(c["type"]), rfc3339.parse_time(c.get("lastTransitionTime"))
    return "", None


def _finished_at(pod: Object) -> float | None:
    latest: float | None = None
    for cs in podutil.status(pod).get("containerStatuses") or []:
        t = rfc3339.parse_time(((cs.get("state") or {}).get("terminated") or {}).get("finishedAt"))
        if t is not None and (latest is None or t > latest):
            latest = t
    return latest


class JobController(PodOwnerController):
    name = "job"
    default_workers = 5
    owner_kind = "Job"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        # job key -> failed pod uid -> when we first saw it failed (pods
        # without a container finishedAt); dropped when the job finishes or goes.
        self._failure_seen: dict[str, dict[str, float]] = {}

    def claim_pods(self, owner: Object) -> list[Object]:
        if not podutil.spec(owner).get("selector"):
            owner = copy.deepcopy(owner)
            owner.setdefault("spec", {})["selector"] = job_selector(owner)
        return super().claim_pods(owner)

    def selector_matches_template(
        self, owner: Object, labels: Mapping[str, str] | None = None
    ) -> bool:
        if not podutil.spec(owner).get("selector"):
            owner = copy.deepcopy(owner)
            owner.setdefault("spec", {})["selector"] = job_selector(owner)
        return super().selector_matches_template(owner, labels)

    def _new_pod(self, job: Object) -> Object:
        pod = pod_from_template(job, f"{podutil.name_of(job)}-")
        labels = pod["metadata"].setdefault("labels", {})
        labels.setdefault(CONTROLLER_UID_LABEL, podutil.uid_of(job))
        labels.setdefault(JOB_NAME_LABEL, podutil.name_of(job))
        return pod

    def sync(self, key: str) -> float | None:
        job = self.owners.store.get_by_key(key)
        if job is None:
            self.expectations.delete(key)
            self._failure_seen.pop(key, None)
            return None
        job = copy.deepcopy(job)
        now = self.clock.now()
        finished, finished_at = finished_condition(job)
        st: dict[str, Any] = dict(podutil.status(job))
        if finished:
            self._failure_seen.pop(key, None)
            plan = job_calc.plan_job(
                podutil.spec(job), job_calc.JobCounts(0, 0, 0), None, now, finished_at, finished
            )
            if plan.delete_job:
                delete_job(self.client, job)
                return None
            # A finished Job keeps no running pods (one created just before it
            # failed, or seen only after the final sync, is removed here).
            leftovers = [p for p in self.claim_pods(job) if podutil.is_active(p)]
            if leftovers:
                self.delete_pods(key, job, [dict(p) for p in leftovers])
            return plan.requeue_after
        needs_sync = self.expectations.satisfied(key)
        pods = self.claim_pods(job)
        active = [p for p in pods if podutil.is_active(p)]
        succeeded = sum(1 for p in pods if podutil.phase(p) == "Succeeded")
        failed_pods = [p for p in pods if podutil.phase(p) == "Failed"]
        failed = len(failed_pods)
        if (podutil.spec(job).get("template") or {}).get("spec", {}).get(
            "restartPolicy"
        ) == "OnFailure":
            failed += sum(podutil.restart_count(p) for p in active)
        succeeded = max(succeeded, int(st.get("succeeded") or 0))
        failed = max(failed, int(st.get("failed") or 0))
        last_failure: float | None = None
        for p in failed_pods:
            t = _finished_at(p)
            if t is None:
                t = self._failure_seen.setdefault(key, {}).setdefault(podutil.uid_of(p), now)
            last_failure = t if last_failure is None else max(last_failure, t)
        start = rfc3339.parse_time(st.get("startTime"))
        if start is None and not podutil.spec(job).get("suspend"):
            start = now
            st["startTime"] = rfc3339.format_time(now)
        plan = job_calc.plan_job(
            podutil.spec(job),
            job_calc.JobCounts(len(active), succeeded, failed, last_failure),
            start,
            now,
        )
        if plan.finished and plan.delete:
            # Finishing: the active pods go whatever the expectations say.
            self.delete_pods(key, job, [dict(p) for p in active])
        elif needs_sync and not podutil.is_deleting(job):
            if plan.delete:
                victims = ranking.pods_to_delete(active, plan.delete)
                self.delete_pods(key, job, [dict(p) for p in victims])
            elif plan.create:
                self.create_pods(key, job, plan.create, lambda i: self._new_pod(job))
        if plan.finished:
            active_after = 0
        elif needs_sync:
            active_after = len(active) - plan.delete + plan.create
        else:
            active_after = len(active)
        st.update({"active": max(0, active_after), "succeeded": succeeded, "failed": failed})
        if not st["active"]:
            st.pop("active")
        conds = st.get("conditions")
        requeue = plan.requeue_after
        if plan.finished:
            conds = podutil.set_condition(
                conds, plan.finished, "True", plan.reason, plan.message, now
            )
            st["active"] = 0
            st.pop("active")
            if plan.finished == "Complete":
                st["completionTime"] = rfc3339.format_time(now)
                self.recorder.event(job, "Normal", "Completed", "Job completed")
            else:
                self.recorder.event(job, "Warning", plan.reason, plan.message)
            ttl = podutil.spec(job).get("ttlSecondsAfterFinished")
            requeue = float(ttl) if ttl is not None else None
        st["conditions"] = conds
        if not st["conditions"]:
            st.pop("conditions")
        # Written at the resourceVersion read: a cache behind the server
        # (say, without the startTime we wrote) gets Conflict and a retry,
        # never a lost startTime.
        if not self.write_status("Job", job, st, at_read_version=True):
            return None
        return requeue


def init(ctx: ControllerContext) -> Controller:
    return JobController(ctx)
