"""Deployment (apps/v1): declarative updates of pods through ReplicaSets.

- Validation: the workload's rules (shared/workload.py), pods restart
  Always; strategy RollingUpdate (maxUnavailable, maxSurge: an integer or a
  percentage, not both 0) or Recreate (without rollingUpdate);
  progressDeadlineSeconds >= 1.
- Defaults: replicas 1, revisionHistoryLimit 10, progressDeadlineSeconds
  600, RollingUpdate 25%/25%, the pod template's.
- Columns: NAME READY UP-TO-DATE AVAILABLE AGE; wide adds CONTAINERS IMAGES SELECTOR.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors, enum, integer, mapping, percent_or_int
from controlplane.api.display import age, name, spec, status
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
    workload.validate(e, obj, old, ("Always",))
    deploy_spec: Any = obj.get("spec")
    if not isinstance(deploy_spec, dict):
        return
    strategy: Any = deploy_spec.get("strategy")
    if mapping(e, "spec.strategy", strategy):
        enum(e, "spec.strategy.type", strategy.get("type"), ("RollingUpdate", "Recreate"))
        rolling: Any = strategy.get("rollingUpdate")
        if strategy.get("type") == "Recreate" and rolling:
            e.add(
                "spec.strategy.rollingUpdate", "may not be specified when strategy type is Recreate"
            )
        if mapping(e, "spec.strategy.rollingUpdate", rolling):
            percent_or_int(
                e, "spec.strategy.rollingUpdate.maxUnavailable", rolling.get("maxUnavailable")
            )
            percent_or_int(e, "spec.strategy.rollingUpdate.maxSurge", rolling.get("maxSurge"))
            if rolling.get("maxUnavailable") in (0, "0%") and rolling.get("maxSurge") in (0, "0%"):
                e.add("spec.strategy.rollingUpdate.maxUnavailable",
                      "may not be 0 when maxSurge is 0")  # fmt: skip
    integer(e, "spec.progressDeadlineSeconds", deploy_spec.get("progressDeadlineSeconds"), 1)


def defaults(obj: Object) -> None:
    deploy_spec = child(obj, "spec")
    deploy_spec.setdefault("replicas", 1)
    deploy_spec.setdefault("revisionHistoryLimit", 10)
    deploy_spec.setdefault("progressDeadlineSeconds", 600)
    strategy = child(deploy_spec, "strategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = child(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    template_defaults(obj, "spec")


def row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    desired = spec(obj).get("replicas", 1)
    cells = [
        name(obj),
        f"{st.get('readyReplicas', 0)}/{desired}",
        str(st.get("updatedReplicas", 0)),
        str(st.get("availableReplicas", 0)),
        age(obj, now),
    ]
    if wide:
        cells += workload.wide_cells(obj)
    return cells


DEFINITION = KindDef(
    KindInfo("Deployment", "apps/v1", short_names=("deploy",), has_scale=True, categories=("all",)),
    types={
        **PODSPEC_TYPES,
        **declare(
            APPS,
            """
            Deployment [apps/v1 Deployment]: Deployment enables declarative updates for Pods and
                                             ReplicaSets.
                spec    DeploymentSpec
                status  object
            DeploymentSpec: DeploymentSpec is the specification of the desired behavior of the
                            Deployment.
                replicas                 integer          Number of desired pods. Defaults to 1.
                selector!                LabelSelector    Label selector for pods. Must match the
                                                          template's labels.
                template!                PodTemplateSpec  Template describes the pods that will be
                                                          created.
                strategy                 object           The deployment strategy: Recreate or
                                                          RollingUpdate.
                minReadySeconds          integer          Seconds a new pod must be ready to be
                                                          available.
                revisionHistoryLimit     integer          The number of old ReplicaSets to retain.
                                                          Defaults to 10.
                paused                   boolean          Indicates that the deployment is paused.
                progressDeadlineSeconds  integer          Seconds before a stalled deployment is
                                                          reported failed.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
    printer=Printer(
        columns(("NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"), workload.WIDE), row
    ),
    patch_meta=facts(TEMPLATE, CONDITIONS, {"spec.strategy": FieldMeta("retainKeys")}),
)
