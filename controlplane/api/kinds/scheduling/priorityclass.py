"""PriorityClass (scheduling.k8s.io/v1, cluster-scoped): a name for a pod priority.

- Validation: value required, at most one billion (the built-in system-*
  classes up to 2000001000), immutable; globalDefault a boolean;
  preemptionPolicy PreemptLowerPriority or Never.
- Defaults: preemptionPolicy PreemptLowerPriority, globalDefault false.
- Admission: only one class may be the global default.
- Columns: NAME VALUE GLOBAL-DEFAULT AGE.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors, enum, integer
from controlplane.api.display import age, name
from controlplane.api.kinds.definition import AdmissionApi, KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import facts
from controlplane.api.schema import declare
from controlplane.client.errors import Invalid

Object = dict[str, Any]

# The classes every cluster has (the API server creates them at start).
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    value: Any = obj.get("value")
    if value is None:
        e.add("value", "required")
    else:
        class_name = str((obj.get("metadata") or {}).get("name") or "")
        # Only the built-in system-* classes may go above one billion.
        ceiling = 2000001000 if class_name.startswith("system-") else 1000000000
        integer(e, "value", value, -2147483648, ceiling)
    if "globalDefault" in obj and not isinstance(obj["globalDefault"], bool):
        e.add("globalDefault", "must be a boolean")
    enum(e, "preemptionPolicy", obj.get("preemptionPolicy"), ("PreemptLowerPriority", "Never"))
    if old is not None and old.get("value") != value:
        e.add("value", "field is immutable")


def defaults(obj: Object) -> None:
    obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    obj.setdefault("globalDefault", False)


def admit(api: AdmissionApi, info: KindInfo, obj: Object, old: Object | None) -> None:
    if not obj.get("globalDefault"):
        return
    own = obj.get("metadata", {}).get("name")
    for pc in api.cached_objects("PriorityClass"):
        if pc.get("globalDefault") and pc["metadata"]["name"] != own:
            raise Invalid(
                f"globalDefault: PriorityClass {pc['metadata']['name']} is already "
                "marked as default; only one default can exist"
            )


def row(obj: Object, now: float, wide: bool) -> list[str]:
    return [
        name(obj),
        str(obj.get("value", 0)),
        str(bool(obj.get("globalDefault"))).lower(),
        age(obj, now),
        str(obj.get("preemptionPolicy") or "PreemptLowerPriority"),
    ]


DEFINITION = KindDef(
    KindInfo(
        "PriorityClass",
        "scheduling.k8s.io/v1",
        short_names=("pc",),
        namespaced=False,
        has_status=False,
    ),
    types={
        **declare(
            "io.k8s.api.scheduling.v1",
            """
            PriorityClass [scheduling.k8s.io/v1 PriorityClass]: PriorityClass defines a mapping from
                    a priority class name to the priority integer value.
                value!            integer  The priority of pods of this class.
                globalDefault     boolean  Whether this is the default class for pods without one.
                description       string   When this priority class should be used.
                preemptionPolicy  string   PreemptLowerPriority or Never.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
    admit=admit,
    printer=Printer(columns(("NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY")), row),
    patch_meta=facts(),
)
