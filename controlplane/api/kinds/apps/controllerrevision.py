"""ControllerRevision (apps/v1): an immutable snapshot of a workload's
state, the history DaemonSets and StatefulSets keep (and `kubectl rollout
history|undo ds|sts` read).

As Kubernetes has it: namespaced, no short name, no status; `data` (any
object: the controllers store a strategic merge patch replacing
spec.template) is required and immutable, `revision` a non-negative
integer that may change (a controller moves a revision it returns to to
the top). Columns, as Kubernetes' printer: NAME CONTROLLER REVISION AGE,
CONTROLLER the controlling owner as `daemonset.apps/x` (`<none>` without).
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors, integer
from controlplane.api.display import NONE, age, name
from controlplane.api.kinds.definition import Column, KindDef, Printer
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import facts
from controlplane.api.schema import APPS, declare

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    if obj.get("data") is None:
        e.required("data", "data is mandatory")
    integer(e, "revision", obj.get("revision"), 0)
    if old is not None and obj.get("data") != old.get("data"):
        e.invalid("data", obj.get("data"), "field is immutable")


def defaults(obj: Object) -> None:
    obj.setdefault("revision", 0)


def controller(obj: Object) -> str:
    """The controlling owner as Kubernetes prints it: `daemonset.apps/x`."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            api_version = str(ref.get("apiVersion") or "")
            group = api_version.rpartition("/")[0] if "/" in api_version else ""
            kind_name = str(ref.get("kind") or "").lower()
            return (
                f"{kind_name}.{group}/{ref.get('name')}"
                if group
                else f"{kind_name}/{ref.get('name')}"
            )
    return NONE


def row(obj: Object, now: float, wide: bool) -> list[str]:
    return [name(obj), controller(obj), str(obj.get("revision", 0)), age(obj, now)]


DEFINITION = KindDef(
    KindInfo("ControllerRevision", "apps/v1", has_status=False),
    types={
        **declare(
            APPS,
            """
            ControllerRevision [apps/v1 ControllerRevision]: ControllerRevision implements an
                    immutable snapshot of state data. Clients are responsible for serializing and
                    deserializing the objects that contain their internal state. Once a
                    ControllerRevision has been successfully created, it can not be updated.
                data       object   Data is the serialized representation of the state.
                revision!  integer  Revision indicates the revision of the state represented by
                                    Data.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
    printer=Printer(
        (
            Column("NAME"),
            Column("CONTROLLER", type="string", description="Controller of the object"),
            Column(
                "REVISION",
                type="integer",
                description="Revision indicates the revision of the state represented by Data.",
            ),
            Column("AGE"),
        ),
        row,
    ),
    patch_meta=facts(),
)
