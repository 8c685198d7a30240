"""PodDisruptionBudget (policy/v1): how many of a set of pods may be disrupted.

As Kubernetes has it: namespaced, short name `pdb`, a status subresource
(the disruption controller, controlplane/controllers/disruption.py, writes
currentHealthy, desiredHealthy, disruptionsAllowed, expectedPods and the
DisruptionAllowed condition; the eviction subresource reads them).
Validation (ValidatePodDisruptionBudgetSpec): minAvailable and
maxUnavailable exclude each other, each an integer >= 0 or a percentage of
at most 100%; the selector is a valid label selector;
unhealthyPodEvictionPolicy IfHealthyBudget or AlwaysAllow. Columns, as
Kubernetes' printer: NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE.
"""

from __future__ import annotations

import re
from typing import Any

from controlplane.api.checks import Errors, enum, mapping, selector
from controlplane.api.display import age, name, spec, status
from controlplane.api.kinds.definition import Column, KindDef, Printer
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, facts
from controlplane.api.schema import declare

Object = dict[str, Any]

POLICY = "io.k8s.api.policy.v1"
_PERCENT = re.compile(r"^[0-9]+%$")


def _int_or_percent(e: Errors, path: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, str):
        if not _PERCENT.match(value):
            e.add(path, f'Invalid value: "{value}": a valid percent string must be a numeric '
                  "string followed by an ending '%' (e.g. '1%',  or '93%', regex used for "
                  "validation is '[0-9]+%')")  # fmt: skip
        elif int(value[:-1]) > 100:
            e.add(path, f'Invalid value: "{value}": must not be greater than 100%')
    elif isinstance(value, bool) or not isinstance(value, int):
        e.add(path, f"Invalid value: {value!r}: must be an integer or percentage")
    elif value < 0:
        e.add(path, f"Invalid value: {value}: must be greater than or equal to 0")


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    pdb_spec: Any = obj.get("spec")
    if not mapping(e, "spec", pdb_spec):
        return
    if pdb_spec.get("minAvailable") is not None and pdb_spec.get("maxUnavailable") is not None:
        e.add("spec", "Invalid value: minAvailable and maxUnavailable cannot be both set")
    _int_or_percent(e, "spec.minAvailable", pdb_spec.get("minAvailable"))
    _int_or_percent(e, "spec.maxUnavailable", pdb_spec.get("maxUnavailable"))
    selector(e, "spec.selector", pdb_spec.get("selector"), required=False)
    enum(e, "spec.unhealthyPodEvictionPolicy", pdb_spec.get("unhealthyPodEvictionPolicy"),
         ("IfHealthyBudget", "AlwaysAllow"))  # fmt: skip


def _cell(value: Any) -> str:
    return "N/A" if value is None else str(value)


def row(obj: Object, now: float, wide: bool) -> list[str]:
    s = spec(obj)
    return [
        name(obj),
        _cell(s.get("minAvailable")),
        _cell(s.get("maxUnavailable")),
        str(status(obj).get("disruptionsAllowed", 0)),
        age(obj, now),
    ]


DEFINITION = KindDef(
    KindInfo("PodDisruptionBudget", "policy/v1", short_names=("pdb",)),
    types={
        **declare(
            POLICY,
            """
            PodDisruptionBudget [policy/v1 PodDisruptionBudget]: PodDisruptionBudget is an object to
                    define the max disruption that can be caused to a collection of pods
                spec    PodDisruptionBudgetSpec
                status  object
            PodDisruptionBudgetSpec: PodDisruptionBudgetSpec is a description of a
                                     PodDisruptionBudget.
                minAvailable                int-or-string  An eviction is allowed if at least
                                                           minAvailable pods selected by selector
                                                           will still be available after the
                                                           eviction.
                maxUnavailable              int-or-string  An eviction is allowed if at most
                                                           maxUnavailable pods selected by selector
                                                           are unavailable after the eviction.
                selector                    LabelSelector  Label query over pods whose evictions are
                                                           managed by the disruption budget.
                unhealthyPodEvictionPolicy  string         IfHealthyBudget or AlwaysAllow: when
                                                           unhealthy running pods may be evicted.
            """,
        ),
    },
    validate=validate,
    printer=Printer(
        (
            Column("NAME"),
            Column(
                "MIN AVAILABLE", description="The minimum number of pods that must be available."
            ),
            Column(
                "MAX UNAVAILABLE", description="The maximum number of pods that may be unavailable."
            ),
            Column(
                "ALLOWED DISRUPTIONS",
                type="integer",
                description="Calculated number of pods that may be disrupted at this time.",
            ),
            Column("AGE"),
        ),
        row,
    ),
    patch_meta=facts(status=CONDITIONS),
)
