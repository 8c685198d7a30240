"""The CronJob controller: start Jobs on a cron schedule.

Per CronJob: keep `status.active` to the Jobs it owns that have not
finished, delete finished Jobs beyond successfulJobsHistoryLimit /
failedJobsHistoryLimit (oldest first), then ask `cron.plan_cronjob` whether
a schedule is due (most recent unmet time since lastScheduleTime, bounded
by startingDeadlineSeconds; concurrencyPolicy Allow/Forbid/Replace;
suspend) and create the Job `<cronjob>-<minutes since epoch>` from the
jobTemplate. The key is re-queued for the next schedule time on the
injected clock, so tests step a FakeClock instead of waiting. A schedule
that does not parse, or a timeZone this host's tz database does not know
(UnknownTimeZone), is reported with an event and not retried until the
CronJob changes. Schedules are read in spec.timeZone (UTC without one).
"""

from __future__ import annotations

import copy
from datetime import UTC, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from controlplane.client import errors
from controlplane.client.interface import DeleteOptions, Object
from controlplane.controllers import cron, podutil
from controlplane.controllers.base import (
    CONTROLLER_UID,
    Controller,
    ControllerContext,
    controller_uid_index,
)
from controlplane.controllers.job import delete_job, finished_condition
from machinery import rfc3339

SCHEDULED_AT = "batch.kubernetes.io/cronjob-scheduled-timestamp"


class _Unplannable(Exception):
    """Why a CronJob's schedule cannot be planned: its Warning event."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def _plan(cj: Object, st: Object, active: int, now: float) -> tuple[cron.CronPlan, tzinfo]:
    """The CronJob's plan and time zone, or _Unplannable as Kubernetes says it."""
    spec = podutil.spec(cj)
    try:
        schedule = cron.Schedule.parse(str(spec.get("schedule", "")))
    except cron.ScheduleError as err:
        raise _Unplannable("UnparseableSchedule", f"unparseable schedule: {err}") from None
    zone_name = spec.get("timeZone")
    try:
        zone = ZoneInfo(str(zone_name)) if zone_name is not None else UTC
    except (ZoneInfoNotFoundError, ValueError):
        # Validation refuses these; a zone removed from this host's tz
        # database since is Kubernetes' UnknownTimeZone, not a guess.
        raise _Unplannable("UnknownTimeZone",
                           f'invalid timeZone: "{zone_name}": unknown time zone {zone_name}',
                           ) from None  # fmt: skip
    last = rfc3339.parse_time(st.get("lastScheduleTime"))
    try:
        plan = cron.plan_cronjob(spec, schedule, podutil.created_at(cj), last, active, now, zone)
    except cron.ScheduleError as err:  # parses, but never fires (Feb 30): as Kubernetes
        raise _Unplannable("InvalidSchedule",
                           f"invalid schedule: {spec.get('schedule', '')} : {err}") from None  # fmt: skip
    return plan, zone


class CronJobController(Controller):
    name = "cronjob"
    default_workers = 5

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.cronjobs = self.watch_primary("CronJob")
        self.jobs = self.watch("Job", {CONTROLLER_UID: controller_uid_index})
        self.follow(self.jobs, self._job_changed, self._job_changed)

    def _job_changed(self, job: Object) -> None:
        ref = podutil.controller_ref(job)
        if ref is not None and ref.get("kind") == "CronJob":
            self.enqueue_key(f"{podutil.namespace_of(job)}/{ref.get('name')}")

    def sync(self, key: str) -> float | None:
        cj = self.cronjobs.store.get_by_key(key)
        if cj is None or podutil.is_deleting(cj):
            return None
        cj = copy.deepcopy(cj)
        now = self.clock.now()
        spec = podutil.spec(cj)
        ns = podutil.namespace_of(cj)
        jobs = [
            j
            for j in self.jobs.store.by_index(CONTROLLER_UID, podutil.uid_of(cj))
            if podutil.namespace_of(j) == ns and not podutil.is_deleting(j)
        ]
        active = [j for j in jobs if not finished_condition(j)[0]]
        st: dict[str, Any] = dict(podutil.status(cj))
        self._cleanup_history(spec, jobs)
        successes = [j for j in jobs if finished_condition(j)[0] == "Complete"]
        if successes:
            latest = max(
                rfc3339.parse_time(podutil.status(j).get("completionTime")) or 0.0
                for j in successes
            )
            if latest:
                st["lastSuccessfulTime"] = rfc3339.format_time(latest)
        try:
            plan, zone = _plan(cj, st, len(active), now)
        except _Unplannable as why:
            self.recorder.event(cj, "Warning", why.reason, why.message)
            self._write_status(cj, st, active)
            return None
        if plan.skip_reason == "MissedDeadline":
            self.recorder.event(
                cj, "Warning", "MissSchedule", "Missed scheduled time to start a job"
            )
        if plan.run_at is not None:
            if plan.replace_active:
                for j in active:
                    try:
                        self.client.delete(
                            "Job",
                            podutil.name_of(j),
                            ns,
                            DeleteOptions(propagation_policy="Background"),
                        )
                    except errors.NotFound:
                        pass
                    self.recorder.event(
                        cj, "Normal", "SuccessfulDelete", f"Deleted job {podutil.name_of(j)}"
                    )
                active = []
            job = self._job_from_template(cj, plan.run_at, zone)
            try:
                created = self.client.create("Job", job, ns)
                self.recorder.event(
                    cj, "Normal", "SuccessfulCreate", f"Created job {podutil.name_of(created)}"
                )
                active.append(created)
            except errors.AlreadyExists:
                pass
            st["lastScheduleTime"] = rfc3339.format_time(plan.run_at)
        self._write_status(cj, st, active)
        if plan.next_check is None:
            return None
        return max(0.0, plan.next_check - now)

    def _job_from_template(self, cj: Object, scheduled: float, zone: tzinfo = UTC) -> Object:
        template = copy.deepcopy(podutil.spec(cj).get("jobTemplate") or {})
        tmeta = template.get("metadata") or {}
        annotations = dict(tmeta.get("annotations") or {})
        # RFC 3339 in the CronJob's zone, as Kubernetes writes it.
        annotations[SCHEDULED_AT] = rfc3339.format_in_zone(scheduled, zone)
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": cron.job_name(podutil.name_of(cj), scheduled),
                "namespace": podutil.namespace_of(cj),
                "labels": dict(tmeta.get("labels") or {}),
                "annotations": annotations,
                "ownerReferences": [podutil.owner_ref(cj)],
            },
            "spec": template.get("spec") or {},
        }

    def _cleanup_history(self, spec: Any, jobs: list[Object]) -> None:
        for kind, limit_key, default in (
            ("Complete", "successfulJobsHistoryLimit", 3),
            ("Failed", "failedJobsHistoryLimit", 1),
        ):
            limit = spec.get(limit_key)
            limit = default if limit is None else int(limit)
            done = sorted(
                (j for j in jobs if finished_condition(j)[0] == kind),
                key=lambda j: (podutil.created_at(j), podutil.name_of(j)),
            )
            for j in done[: max(0, len(done) - limit)]:
                delete_job(self.client, j)

    def _write_status(self, cj: Object, st: dict[str, Any], active: list[Object]) -> None:
        refs = [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": podutil.name_of(j),
                "namespace": podutil.namespace_of(j),
                "uid": podutil.uid_of(j),
            }
            for j in sorted(active, key=podutil.name_of)
        ]
        if refs:
            st["active"] = refs
        else:
            st.pop("active", None)
        # At the resourceVersion read (lastScheduleTime must never go back).
        self.write_status("CronJob", cj, st, at_read_version=True)


def init(ctx: ControllerContext) -> Controller:
    return CronJobController(ctx)
