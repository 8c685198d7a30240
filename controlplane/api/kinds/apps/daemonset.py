"""DaemonSet (apps/v1): one pod per eligible node.

Validation: no replicas, the workload's rules (shared/workload.py), pods
restart Always, updateStrategy RollingUpdate or OnDelete. Defaults:
revisionHistoryLimit 10, RollingUpdate maxUnavailable 1 / maxSurge 0, the
pod template's. Columns: NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE
NODE SELECTOR AGE; wide adds CONTAINERS IMAGES SELECTOR.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors, enum, mapping
from controlplane.api.display import age, labels_string, name, spec, status
from controlplane.api.kinds.definition import FieldMeta, KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared import workload
from controlplane.api.kinds.shared.fill import child
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, TEMPLATE, facts
from controlplane.api.kinds.shared.podspec import template_defaults
from controlplane.api.kinds.shared.podspec_schema import TYPES as PODSPEC_TYPES
from controlplane.api.schema import APPS, declare

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    ds_spec: Any = obj.get("spec")
    if isinstance(ds_spec, dict) and "replicas" in ds_spec:
        e.add("spec.replicas", "not a DaemonSet field (one pod runs per eligible node)")
    workload.validate(e, obj, old, ("Always",))
    if isinstance(ds_spec, dict):
        strategy: Any = ds_spec.get("updateStrategy")
        if mapping(e, "spec.updateStrategy", strategy):
            enum(e, "spec.updateStrategy.type", strategy.get("type"), ("RollingUpdate", "OnDelete"))


def defaults(obj: Object) -> None:
    ds_spec = child(obj, "spec")
    ds_spec.setdefault("revisionHistoryLimit", 10)
    strategy = child(ds_spec, "updateStrategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = child(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    template_defaults(obj, "spec")


def row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    node_selector = ((spec(obj).get("template") or {}).get("spec") or {}).get("nodeSelector")
    cells = [
        name(obj),
        str(st.get("desiredNumberScheduled", 0)),
        str(st.get("currentNumberScheduled", 0)),
        str(st.get("numberReady", 0)),
        str(st.get("updatedNumberScheduled", 0)),
        str(st.get("numberAvailable", 0)),
        labels_string(node_selector),
        age(obj, now),
    ]
    if wide:
        cells += workload.wide_cells(obj)
    return cells


DEFINITION = KindDef(
    KindInfo("DaemonSet", "apps/v1", short_names=("ds",), categories=("all",)),
    types={
        **PODSPEC_TYPES,
        **declare(
            APPS,
            """
            DaemonSet [apps/v1 DaemonSet]: DaemonSet represents the configuration of a daemon set.
                spec    DaemonSetSpec
                status  object
            DaemonSetSpec: DaemonSetSpec is the specification of a daemon set.
                selector!             LabelSelector    A label query over pods that are managed by
                                                       the daemon set.
                template!             PodTemplateSpec  An object that describes the pod that will be
                                                       created.
                updateStrategy        object           An update strategy to replace existing
                                                       DaemonSet pods.
                minReadySeconds       integer          Seconds a new pod must be ready to be
                                                       available.
                revisionHistoryLimit  integer          The number of old history to retain.
            """,
        ),
    },
    defaults=defaults,
    initial_status={
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    },  # the zero status's fields Kubernetes always writes
    validate=validate,
    printer=Printer(
        columns(
            (
                "NAME",
                "DESIRED",
                "CURRENT",
                "READY",
                "UP-TO-DATE",
                "AVAILABLE",
                "NODE SELECTOR",
                "AGE",
            ),
            workload.WIDE,
        ),
        row,
    ),
    patch_meta=facts(TEMPLATE, CONDITIONS, {"spec.updateStrategy": FieldMeta("retainKeys")}),
)
