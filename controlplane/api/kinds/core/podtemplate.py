"""PodTemplate (v1): a pod template kept as an object of its own, which
controllers and users copy pods from.

As Kubernetes has it: namespaced, no short name, no status; its template is
validated as every pod template is (labels, the pod spec with any restart
policy; shared/podspec.py) and defaulted as a pod spec is. Columns, as
Kubernetes' printer: NAME CONTAINERS IMAGES POD LABELS (no AGE).
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors
from controlplane.api.display import labels_string, name
from controlplane.api.kinds.definition import Column, KindDef, Printer
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared import podspec
from controlplane.api.kinds.shared.patch_facts import facts
from controlplane.api.kinds.shared.podspec_schema import TYPES as PODSPEC_TYPES
from controlplane.api.schema import CORE, declare

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    podspec.validate_template(e, "template", obj.get("template"))


def defaults(obj: Object) -> None:
    podspec.template_defaults(obj)


def row(obj: Object, now: float, wide: bool) -> list[str]:
    template = obj.get("template") or {}
    containers = (template.get("spec") or {}).get("containers") or []
    return [
        name(obj),
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        labels_string((template.get("metadata") or {}).get("labels")),
    ]


DEFINITION = KindDef(
    KindInfo("PodTemplate", "v1", has_status=False),
    types={
        **PODSPEC_TYPES,
        **declare(
            CORE,
            """
            PodTemplate [v1 PodTemplate]: PodTemplate describes a template for creating copies of a
                                          predefined pod.
                template  PodTemplateSpec  Template defines the pods that will be created from this
                                           pod template.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
    printer=Printer(
        (
            Column("NAME"),
            Column("CONTAINERS", description="Names of each container in the template."),
            Column("IMAGES", description="Images referenced by each container in the template."),
            Column("POD LABELS", description="The labels for the pod template."),
        ),
        row,
    ),
    patch_meta=facts("template.spec"),
)
