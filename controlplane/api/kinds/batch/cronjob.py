"""CronJob (batch/v1): Jobs on a schedule.

- Validation: a standard 5-field cron schedule (an optional TZ= or CRON_TZ=
  prefix) or a macro (@hourly ... @yearly, @every), concurrencyPolicy,
  deadlines and history limits, the jobTemplate's spec as a Job's.
- Defaults: Allow, not suspended, 3 successful and 1 failed Jobs kept, the
  jobTemplate's spec as a Job's.
- Columns: NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE.
"""

from __future__ import annotations

import re
from typing import Any

from controlplane.api.checks import Errors, enum, integer, mapping
from controlplane.api.display import NONE, age, name, since, spec, status
from controlplane.api.kinds.batch import job
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.fill import child
from controlplane.api.kinds.shared.patch_facts import OBJECT_META, facts, under
from controlplane.api.schema import BATCH, LIST_META, SPEC, STATUS, kind, struct

Object = dict[str, Any]

_CRON_FIELD = re.compile(r"^[\d*/,\-A-Za-z?LW#]+$")
_MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


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
    return [
        name(obj),
        str(spec(obj).get("schedule", "")),
        str(spec(obj).get("timeZone") or NONE),
        "True" if spec(obj).get("suspend") else "False",
        str(len(st.get("active") or [])),
        since(last, now) if last else NONE,
        age(obj, now),
    ]


DEFINITION = KindDef(
    KindInfo("CronJob", "batch/v1", "cronjobs", "cronjob", ("cj",), categories=("all",)),
    types={
        **job.TYPES,
        "CronJob": kind(
            BATCH,
            "CronJob represents the configuration of a single cron job.",
            ("batch", "v1", "CronJob"),
            spec=("CronJobSpec", SPEC),
            status=("object", STATUS),
        ),
        "CronJobSpec": struct(
            BATCH,
            "CronJobSpec describes how the job execution will look like and when it will actually run.",
            ("schedule", "jobTemplate"),
            schedule=("string", "The schedule in Cron format."),
            timeZone=("string", "The time zone name for the given schedule."),
            startingDeadlineSeconds=("integer", "Deadline in seconds for starting a missed job."),
            concurrencyPolicy=("string", "Allow, Forbid or Replace."),
            suspend=("boolean", "Suspend subsequent executions."),
            jobTemplate=(
                "JobTemplateSpec",
                "The job that will be created when executing a CronJob.",
            ),
            successfulJobsHistoryLimit=(
                "integer",
                "The number of successful finished jobs to retain.",
            ),
            failedJobsHistoryLimit=("integer", "The number of failed finished jobs to retain."),
        ),
        "JobTemplateSpec": struct(
            BATCH,
            "JobTemplateSpec describes the data a Job should have when created from a template.",
            metadata=("ObjectMeta", LIST_META),
            spec=("JobSpec", "Specification of the desired behavior of the job."),
        ),
    },
    defaults=defaults,
    validate=validate,
    printer=Printer(
        columns(("NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE")),
        row,
    ),
    patch_meta=facts(
        "spec.jobTemplate.spec.template.spec",
        extra=under("spec.jobTemplate.metadata", OBJECT_META),
    ),
)
