"""CronJob (batch/v1): Jobs on a schedule.

- Validation: spec.timeZone from the tz database (controlplane/api/timezone.py);
  a standard 5-field cron schedule (an optional TZ= or CRON_TZ=
  prefix) or a macro (@hourly ... @yearly, @every), concurrencyPolicy,
  deadlines and history limits, the jobTemplate's spec as a Job's.
- Defaults: Allow, not suspended, 3 successful and 1 failed Jobs kept, the
  jobTemplate's spec as a Job's.
- Columns: NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE.
"""

from __future__ import annotations

import re
from typing import Any

from controlplane.api import timezone
from controlplane.api.checks import Errors, enum, integer, mapping
from controlplane.api.display import NONE, age, name, since, spec, status
from controlplane.api.kinds.batch import job
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared import workload
from controlplane.api.kinds.shared.fill import child
from controlplane.api.kinds.shared.patch_facts import OBJECT_META, facts, under
from controlplane.api.schema import BATCH, declare

Object = dict[str, Any]

_CRON_FIELD = re.compile(r"^[\d*/,\-A-Za-z?LW#]+$")
_MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


def _time_zone(e: Errors, cj_spec: Object, old: Object | None) -> None:
    """spec.timeZone from the tz database; TZ= in the schedule refused on
    new CronJobs (kept on those that had it), as Kubernetes does."""
    problem = timezone.time_zone_problem(cj_spec.get("timeZone"))
    if problem:
        e.add("spec.timeZone", problem)
    schedule = cj_spec.get("schedule")
    old_schedule = ((old or {}).get("spec") or {}).get("schedule")
    if timezone.schedule_has_tz(schedule):
        if cj_spec.get("timeZone") is not None:
            e.add("spec.schedule", f'Invalid value: "{schedule}": cannot use both timeZone '
                  "field and TZ or CRON_TZ in schedule")  # fmt: skip
        elif not timezone.schedule_has_tz(old_schedule):
            e.add("spec.schedule", f'Invalid value: "{schedule}": cannot use TZ or CRON_TZ in '
                  "schedule, use timeZone field instead")  # fmt: skip


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    cj_spec: Any = obj.get("spec")
    if not mapping(e, "spec", cj_spec, required=True):
        return
    schedule: Any = cj_spec.get("schedule")
    if not isinstance(schedule, str) or not schedule.strip():
        e.add("spec.schedule", "required")
    elif not schedule.startswith("@"):
        fields = schedule.split()
        if (fields and fields[0].startswith("TZ=")) or (
            fields and fields[0].startswith("CRON_TZ=")
        ):
            fields = fields[1:]
        if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
            e.add("spec.schedule", f"{schedule!r} is not a standard 5-field cron schedule")
    elif schedule not in _MACROS and not schedule.startswith("@every "):
        e.add("spec.schedule", f"unknown schedule macro {schedule!r}")
    _time_zone(e, cj_spec, old)
    enum(
        e,
        "spec.concurrencyPolicy",
        cj_spec.get("concurrencyPolicy"),
        ("Allow", "Forbid", "Replace"),
    )
    integer(e, "spec.startingDeadlineSeconds", cj_spec.get("startingDeadlineSeconds"), 0)
    integer(e, "spec.successfulJobsHistoryLimit", cj_spec.get("successfulJobsHistoryLimit"), 0)
    integer(e, "spec.failedJobsHistoryLimit", cj_spec.get("failedJobsHistoryLimit"), 0)
    jt: Any = cj_spec.get("jobTemplate")
    if mapping(e, "spec.jobTemplate", jt, required=True):
        job.validate_spec(e, "spec.jobTemplate.spec", jt.get("spec"), manual=False)


def defaults(obj: Object) -> None:
    cj_spec = child(obj, "spec")
    cj_spec.setdefault("concurrencyPolicy", "Allow")
    cj_spec.setdefault("suspend", False)
    cj_spec.setdefault("successfulJobsHistoryLimit", 3)
    cj_spec.setdefault("failedJobsHistoryLimit", 1)
    job.spec_defaults(child(child(cj_spec, "jobTemplate"), "spec"))


def row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    last = st.get("lastScheduleTime")
    cells = [
        name(obj),
        str(spec(obj).get("schedule", "")),
        str(spec(obj).get("timeZone") or NONE),
        "True" if spec(obj).get("suspend") else "False",
        str(len(st.get("active") or [])),
        since(last, now) if last else NONE,
        age(obj, now),
    ]
    if wide:  # the job template's containers and selector, as printCronJob
        job_spec = spec(obj).get("jobTemplate", {}).get("spec") or {}
        cells += workload.wide_cells({"spec": job_spec})
    return cells


DEFINITION = KindDef(
    KindInfo("CronJob", "batch/v1", short_names=("cj",), categories=("all",)),
    types={
        **job.TYPES,
        **declare(
            BATCH,
            """
            CronJob [batch/v1 CronJob]: CronJob represents the configuration of a single cron job.
                spec    CronJobSpec
                status  object
            CronJobSpec: CronJobSpec describes how the job execution will look like and when it will
                         actually run.
                schedule!                   string           The schedule in Cron format.
                timeZone                    string           The time zone name for the given
                                                             schedule.
                startingDeadlineSeconds     integer          Deadline in seconds for starting a
                                                             missed job.
                concurrencyPolicy           string           Allow, Forbid or Replace.
                suspend                     boolean          Suspend subsequent executions.
                jobTemplate!                JobTemplateSpec  The job that will be created when
                                                             executing a CronJob.
                successfulJobsHistoryLimit  integer          The number of successful finished jobs
                                                             to retain.
                failedJobsHistoryLimit      integer          The number of failed finished jobs to
                                                             retain.
            JobTemplateSpec: JobTemplateSpec describes the data a Job should have when created from
                             a template.
                metadata  ObjectMeta
                spec      JobSpec     Specification of the desired behavior of the job.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
    printer=Printer(
        columns(
            ("NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"),
            ("CONTAINERS", "IMAGES", "SELECTOR"),
        ),
        row,
    ),
    patch_meta=facts(
        "spec.jobTemplate.spec.template.spec",
        extra=under("spec.jobTemplate.metadata", OBJECT_META),
    ),
)
