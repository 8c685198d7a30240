"""ReplicationController (v1): the ReplicaSet's predecessor, a number of pods
from one template chosen by an equality selector (a plain label map).

As Kubernetes has it: short name `rc`, status and scale subresources,
category `all`. Defaults (SetDefaults_ReplicationController): a missing
selector and missing labels are the template's labels, replicas 1.
Validation: replicas and minReadySeconds >= 0, a non-empty selector that
the template's labels match, the template (pods restart Always). The
replication controller (controlplane/controllers/replicationcontroller.py)
is the ReplicaSet controller with this selector. Columns: NAME DESIRED
CURRENT READY AGE; wide adds CONTAINERS IMAGES SELECTOR.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors, integer, label_map, mapping
from controlplane.api.display import NONE, spec
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared import podspec, workload
from controlplane.api.kinds.shared.fill import child
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, TEMPLATE, facts
from controlplane.api.kinds.shared.podspec import template_defaults
from controlplane.api.kinds.shared.podspec_schema import TYPES as PODSPEC_TYPES
from controlplane.api.schema import CORE, declare

Object = dict[str, Any]


def defaults(obj: Object) -> None:
    rc_spec = child(obj, "spec")
    template = rc_spec.get("template")
    labels = ((template or {}).get("metadata") or {}).get("labels") if isinstance(
        template, dict) else None  # fmt: skip
    if isinstance(labels, dict) and labels:
        if not rc_spec.get("selector"):
            rc_spec["selector"] = dict(labels)
        meta = child(obj, "metadata")
        if not meta.get("labels"):
            meta["labels"] = dict(labels)
    rc_spec.setdefault("replicas", 1)
    template_defaults(obj, "spec")


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    rc_spec: Any = obj.get("spec")
    if not mapping(e, "spec", rc_spec, required=True):
        return
    integer(e, "spec.replicas", rc_spec.get("replicas"), 0)
    integer(e, "spec.minReadySeconds", rc_spec.get("minReadySeconds"), 0)
    selector: Any = rc_spec.get("selector")
    if not selector:
        e.add("spec.selector", "Required value")
    else:
        label_map(e, "spec.selector", selector)
    template: Any = rc_spec.get("template")
    if template is None:
        e.add("spec.template", "Required value")
        return
    podspec.validate_template(e, "spec.template", template, None, ("Always",))
    labels = ((template.get("metadata") or {}).get("labels") or {}) if isinstance(
        template, dict) else {}  # fmt: skip
    if (
        isinstance(selector, dict)
        and selector
        and isinstance(labels, dict)
        and any(labels.get(k) != v for k, v in selector.items())
    ):
        shown = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        e.add("spec.template.metadata.labels",
              f"Invalid value: {shown!r}: `selector` does not match template `labels`")  # fmt: skip


def row(obj: Object, now: float, wide: bool) -> list[str]:
    cells = workload.replica_cells(obj, now)
    if wide:
        selector = spec(obj).get("selector") or {}
        cells += [
            *workload.images(obj),
            ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or NONE,
        ]
    return cells


DEFINITION = KindDef(
    KindInfo(
        "ReplicationController", "v1", short_names=("rc",), has_scale=True, categories=("all",)
    ),
    types={
        **PODSPEC_TYPES,
        **declare(
            CORE,
            """
            ReplicationController [v1 ReplicationController]: ReplicationController represents the
                    configuration of a replication controller.
                spec    ReplicationControllerSpec
                status  object
            ReplicationControllerSpec: ReplicationControllerSpec is the specification of a
                                       replication controller.
                replicas         integer          Replicas is the number of desired replicas.
                                                  Defaults to 1.
                minReadySeconds  integer          Seconds a new pod must be ready to be available.
                selector         map              Selector is a label query over pods that should
                                                  match the Replicas count.
                template         PodTemplateSpec  Template is the object that describes the pod that
                                                  will be created if insufficient replicas are
                                                  detected.
            """,
        ),
    },
    defaults=defaults,
    initial_status={"replicas": 0},  # the zero status's fields Kubernetes always writes
    validate=validate,
    printer=Printer(columns(("NAME", "DESIRED", "CURRENT", "READY", "AGE"), workload.WIDE), row),
    patch_meta=facts(TEMPLATE, CONDITIONS),
)
