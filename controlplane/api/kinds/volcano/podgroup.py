"""Volcano's PodGroup (scheduling.volcano.sh/v1beta1): a set of pods
scheduled together (gang scheduling); it also serves the default
scheduler's Coscheduling, and skiff's earlier scheduling.skiff.dev/v1alpha1
manifests are still accepted (and described by the OpenAPI documents).

Validation: counts >= 0 (minMember, each task's minTaskMember; skiff's
scheduleTimeoutSeconds, Coscheduling's, >= 1), minResources quantities,
the phase one of Volcano's; defaults (minMember 1, the default queue,
Pending): controlplane/api/volcano.py's. Admission on create: a group on
the default queue goes to its namespace's (annotation
scheduling.volcano.sh/queue-name), and its queue exists and is Open (a
running group whose queue closes keeps running).
Columns: NAME MIN-MEMBER PHASE AGE.
"""

from __future__ import annotations

from typing import Any

from controlplane.api import volcano
from controlplane.api.checks import Errors
from controlplane.api.display import age, name, spec, status
from controlplane.api.kinds.definition import AdmissionApi, KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, facts
from controlplane.api.kinds.volcano.queue import check_open
from controlplane.api.quantity import parse_quantity
from controlplane.api.schema import declare
from controlplane.client.errors import NotFound

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        e.add("spec", "required")
        return
    volcano.nonneg_int(e, "spec.minMember", spec.get("minMember"))
    timeout = spec.get("scheduleTimeoutSeconds")  # skiff's Coscheduling extension
    if timeout is not None:
        seconds = volcano.nonneg_int(e, "spec.scheduleTimeoutSeconds", timeout)
        if seconds is not None and seconds < 1:
            e.add("spec.scheduleTimeoutSeconds", "must be >= 1")
    tm = spec.get("minTaskMember")
    if tm is not None:
        if not isinstance(tm, dict):
            e.add("spec.minTaskMember", "must be an object of task name -> count")
        else:
            for k, v in tm.items():
                volcano.nonneg_int(e, f"spec.minTaskMember.{k}", v)
    volcano.resources(e, "spec.minResources", spec.get("minResources"), parse_quantity)
    phase = (obj.get("status") or {}).get("phase")
    if phase is not None and phase not in volcano.PODGROUP_PHASES:
        e.add("status.phase",
              f"unsupported value {phase!r}: supported: {', '.join(volcano.PODGROUP_PHASES)}")  # fmt: skip


QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"  # on a Namespace: its groups' queue


def admit(api: AdmissionApi, info: KindInfo, obj: Object, old: Object | None) -> None:
    """On create, Volcano's PodGroup webhooks: a group on the default queue goes
    to its namespace's queue (annotation scheduling.volcano.sh/queue-name),
    and its queue must exist and be Open."""
    if old is not None:
        return
    pg_spec = obj.setdefault("spec", {})
    queue = str(pg_spec.get("queue") or volcano.DEFAULT_QUEUE)
    namespace = (obj.get("metadata") or {}).get("namespace")
    if queue == volcano.DEFAULT_QUEUE and namespace:
        try:
            ns = api.get_object("Namespace", str(namespace), None)
        except NotFound:
            ns = {}
        named = ((ns.get("metadata") or {}).get("annotations") or {}).get(QUEUE_ANNOTATION)
        if isinstance(named, str) and named:
            queue = pg_spec["queue"] = named
    check_open(api, "spec.queue", queue, podgroup=True)


def row(obj: Object, now: float, wide: bool) -> list[str]:
    return [
        name(obj),
        str(spec(obj).get("minMember", "")),
        str(status(obj).get("phase") or "Pending"),
        age(obj, now),
    ]


DEFINITION = KindDef(
    KindInfo(
        "PodGroup",
        "scheduling.volcano.sh/v1beta1",
        short_names=("pg", "podgroup-v1beta1"),
        also_api_versions=("scheduling.skiff.dev/v1alpha1",),
    ),
    types={
        **declare(
            "dev.skiff.scheduling.v1alpha1",
            """
            PodGroup [scheduling.skiff.dev/v1alpha1 PodGroup]: PodGroup is a set of pods scheduled
                    together (gang scheduling).
                spec    object  minMember, minResources, scheduleTimeoutSeconds, ...
                status  object
            """,
        ),
    },
    defaults=volcano.default_podgroup,
    validate=validate,
    admit=admit,
    printer=Printer(columns(("NAME", "MIN-MEMBER", "PHASE", "AGE")), row),
    patch_meta=facts(status=CONDITIONS),
)
