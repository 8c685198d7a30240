"""Job (batch/v1): pods run to completion.

- Validation (spec_problems, shared with CronJob's jobTemplate):
  parallelism, completions, backoffLimit, deadlines, completionMode (Indexed
  needs completions), the selector (when manualSelector) matching the
  template, pods restart OnFailure or Never (required); template and
  completions are immutable.
- Defaults: completions and parallelism 1 when neither is set,
  backoffLimit 6, NonIndexed, not suspended, the pod template's.
- Admission on create: the generated selector and pod labels
  (batch.kubernetes.io/controller-uid, job-name), unless manualSelector.
- Columns: NAME STATUS COMPLETIONS DURATION AGE; wide adds CONTAINERS
  IMAGES SELECTOR.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors, enum, integer, mapping, selector
from controlplane.api.display import age, human_duration, meta, name, spec, status
from controlplane.api.kinds.definition import AdmissionApi, KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared import podspec, workload
from controlplane.api.kinds.shared.fill import child
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, TEMPLATE, facts
from controlplane.api.kinds.shared.podspec_schema import TYPES as PODSPEC_TYPES
from controlplane.api.schema import BATCH, Type, declare
from machinery.rfc3339 import parse_time

Object = dict[str, Any]


def validate_spec(e: Errors, path: str, job_spec: Any, old_spec: Any = None,
                  manual: bool = True) -> None:  # fmt: skip
    """A Job's spec at `path` (spec, or a CronJob's spec.jobTemplate.spec)."""
    if not mapping(e, path, job_spec, required=True):
        return
    integer(e, f"{path}.parallelism", job_spec.get("parallelism"), 0)
    integer(e, f"{path}.completions", job_spec.get("completions"), 0)
    integer(e, f"{path}.backoffLimit", job_spec.get("backoffLimit"), 0)
    integer(e, f"{path}.activeDeadlineSeconds", job_spec.get("activeDeadlineSeconds"), 1)
    integer(e, f"{path}.ttlSecondsAfterFinished", job_spec.get("ttlSecondsAfterFinished"), 0)
    enum(e, f"{path}.completionMode", job_spec.get("completionMode"), ("NonIndexed", "Indexed"))
    if job_spec.get("completionMode") == "Indexed" and job_spec.get("completions") is None:
        e.add(f"{path}.completions", "required when completionMode is Indexed")
    job_selector: Any = job_spec.get("selector")
    if manual or job_selector is not None:
        selector(e, f"{path}.selector", job_selector, required=manual)
    podspec.validate_template(e, f"{path}.template", job_spec.get("template"),
                              job_selector if manual else None, ("OnFailure", "Never"))  # fmt: skip
    template: Any = job_spec.get("template")
    if (
        isinstance(template, dict)
        and isinstance(template.get("spec"), dict)
        and template["spec"].get("restartPolicy") is None
    ):
        e.add(f"{path}.template.spec.restartPolicy", "required: OnFailure or Never")
    if isinstance(old_spec, dict):
        if old_spec.get("template") != job_spec.get("template"):
            e.add(f"{path}.template", "field is immutable")
        if old_spec.get("completions") != job_spec.get("completions"):
            e.add(f"{path}.completions", "field is immutable")


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    job_spec: Any = obj.get("spec")
    validate_spec(
        e,
        "spec",
        job_spec,
        (old or {}).get("spec"),
        manual=bool((job_spec or {}).get("manualSelector")),
    )


def spec_defaults(job_spec: Object) -> None:
    """A Job's spec's defaults (spec, or a CronJob's spec.jobTemplate.spec)."""
    if "completions" not in job_spec and "parallelism" not in job_spec:
        job_spec["completions"] = 1
        job_spec["parallelism"] = 1
    job_spec.setdefault("parallelism", 1)
    job_spec.setdefault("backoffLimit", 6)
    job_spec.setdefault("completionMode", "NonIndexed")
    job_spec.setdefault("suspend", False)
    podspec.defaults(child(child(job_spec, "template"), "spec"))


def defaults(obj: Object) -> None:
    spec_defaults(child(obj, "spec"))


def admit(api: AdmissionApi, info: KindInfo, obj: Object, old: Object | None) -> None:
    if old is not None:
        return
    job_spec = obj.setdefault("spec", {})
    if job_spec.get("manualSelector"):
        return
    meta = obj["metadata"]
    uid, job_name = meta["uid"], meta["name"]
    job_spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    template = job_spec.setdefault("template", {})
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    labels.update(
        {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": job_name,
            "controller-uid": uid,
            "job-name": job_name,
        }
    )


def row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    conditions = {c.get("type"): c.get("status") for c in st.get("conditions") or []}
    if conditions.get("Complete") == "True":
        state = "Complete"
    elif conditions.get("Failed") == "True":
        state = "Failed"
    elif meta(obj).get("deletionTimestamp"):
        state = "Terminating"
    elif conditions.get("Suspended") == "True":
        state = "Suspended"
    elif conditions.get("FailureTarget") == "True":
        state = "FailureTarget"
    elif conditions.get("SuccessCriteriaMet") == "True":
        state = "SuccessCriteriaMet"
    else:
        state = "Running"
    completions = spec(obj).get("completions")
    shown = f"{st.get('succeeded', 0)}/{completions if completions is not None else 1}"
    start, end = parse_time(st.get("startTime")), parse_time(st.get("completionTime"))
    duration = "" if start is None else human_duration((end if end is not None else now) - start)
    cells = [name(obj), state, shown, duration, age(obj, now)]
    if wide:
        cells += workload.wide_cells(obj)
    return cells


TYPES: dict[str, Type] = {
    **PODSPEC_TYPES,
    **declare(
        BATCH,
        """
        Job [batch/v1 Job]: Job represents the configuration of a single job.
            spec    JobSpec
            status  object
        JobSpec: JobSpec describes how the job execution will look like.
            parallelism              integer          The maximum desired number of pods running at
                                                      any given time.
            completions              integer          The desired number of successfully finished
                                                      pods.
            activeDeadlineSeconds    integer          Seconds the job may be active before it is
                                                      terminated.
            podFailurePolicy         object           How failed pods influence the backoffLimit.
            successPolicy            object           When the job can be declared succeeded.
            backoffLimit             integer          The number of retries before marking this job
                                                      failed.
            backoffLimitPerIndex     integer          The number of retries per index (Indexed
                                                      jobs).
            maxFailedIndexes         integer          The maximum number of failed indexes.
            selector                 LabelSelector    A label query over pods that should match the
                                                      pod count.
            manualSelector           boolean          Whether the selector is set by the user.
            template!                PodTemplateSpec  Describes the pod that will be created when
                                                      executing a job.
            ttlSecondsAfterFinished  integer          Seconds after which a finished job is deleted.
            completionMode           string           NonIndexed or Indexed.
            suspend                  boolean          Whether the Job controller should create pods.
            podReplacementPolicy     string           When to create replacement pods.
            managedBy                string           The controller that manages the job.
        """,
    ),
}

DEFINITION = KindDef(
    KindInfo("Job", "batch/v1", categories=("all",)),
    types=TYPES,
    defaults=defaults,
    validate=validate,
    admit=admit,
    printer=Printer(
        columns(("NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"), workload.WIDE), row
    ),
    patch_meta=facts(TEMPLATE, CONDITIONS),
)
