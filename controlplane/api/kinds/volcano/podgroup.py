"""Volcano's PodGroup (scheduling.volcano.sh/v1beta1): a set of pods
scheduled together (gang scheduling); it also serves the default
scheduler's Coscheduling, and skiff's earlier scheduling.skiff.dev/v1alpha1
manifests are still accepted (and described by the OpenAPI documents).

Validation and defaults are Volcano's (controlplane/api/volcano.py:
minMember, minTaskMember, minResources, phase; minMember 1, the default
queue, Pending). Admission on create: its queue exists and is Open.
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
from controlplane.api.schema import STATUS, kind

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    volcano.validate_podgroup(e, obj, old, parse_quantity)


def admit(api: AdmissionApi, info: KindInfo, obj: Object, old: Object | None) -> None:
    if old is None:
        pg_spec = obj.get("spec") or {}
        check_open(api, "spec.queue", str(pg_spec.get("queue") or volcano.DEFAULT_QUEUE))


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
        "podgroups",
        "podgroup",
        ("pg", "podgroup-v1beta1"),
        also_api_versions=("scheduling.skiff.dev/v1alpha1",),
    ),
    types={
        "PodGroup": kind(
            "dev.skiff.scheduling.v1alpha1",
            "PodGroup is a set of pods scheduled together (gang scheduling).",
            ("scheduling.skiff.dev", "v1alpha1", "PodGroup"),
            spec=("object", "minMember, minResources, scheduleTimeoutSeconds, ..."),
            status=("object", STATUS),
        ),
    },
    defaults=volcano.default_podgroup,
    validate=validate,
    admit=admit,
    printer=Printer(columns(("NAME", "MIN-MEMBER", "PHASE", "AGE")), row),
    patch_meta=facts(status=CONDITIONS),
)
