"""ReplicaSet (apps/v1): a number of pods from one template.

Validation: the workload's rules (shared/workload.py), pods restart Always.
Defaults: replicas 1, the pod template's. Columns: NAME DESIRED CURRENT
READY AGE; wide adds CONTAINERS IMAGES SELECTOR.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared import workload
from controlplane.api.kinds.shared.fill import child
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, TEMPLATE, facts
from controlplane.api.kinds.shared.podspec import template_defaults
from controlplane.api.kinds.shared.podspec_schema import TYPES as PODSPEC_TYPES
from controlplane.api.schema import APPS, declare

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    workload.validate(e, obj, old, ("Always",))


def defaults(obj: Object) -> None:
    child(obj, "spec").setdefault("replicas", 1)
    template_defaults(obj, "spec")


def row(obj: Object, now: float, wide: bool) -> list[str]:
    cells = workload.replica_cells(obj, now)
    if wide:
        cells += workload.wide_cells(obj)
    return cells


DEFINITION = KindDef(
    KindInfo("ReplicaSet", "apps/v1", short_names=("rs",), has_scale=True, categories=("all",)),
    types={
        **PODSPEC_TYPES,
        **declare(
            APPS,
            """
            ReplicaSet [apps/v1 ReplicaSet]: ReplicaSet ensures that a specified number of pod
                                             replicas are running at any given time.
                spec    ReplicaSetSpec
                status  object
            ReplicaSetSpec: ReplicaSetSpec is the specification of a ReplicaSet.
                replicas         integer          Number of desired pods. Defaults to 1.
                minReadySeconds  integer          Seconds a new pod must be ready to be available.
                selector!        LabelSelector    A label query over pods that should match the
                                                  replica count.
                template         PodTemplateSpec  The object that describes the pod created when too
                                                  few exist.
            """,
        ),
    },
    defaults=defaults,
    initial_status={"replicas": 0},  # the zero status's fields Kubernetes always writes
    validate=validate,
    printer=Printer(columns(("NAME", "DESIRED", "CURRENT", "READY", "AGE"), workload.WIDE), row),
    patch_meta=facts(TEMPLATE, CONDITIONS),
)
