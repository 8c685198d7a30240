"""The columns kubectl shows for each kind, computed from an object: one home
for skiffctl's tables (controlplane/cli/printers.py) and the API server's
meta.k8s.io Table responses (controlplane/apiserver/tables.py).

Each kind has a row function returning kubectl's columns for it (pods: NAME
READY STATUS RESTARTS AGE, wide adds IP NODE NOMINATED NODE READINESS GATES;
deployments: NAME READY UP-TO-DATE AVAILABLE AGE; nodes: NAME STATUS ROLES
AGE VERSION; ...); kinds without one get NAME AGE. Ages follow kubectl's
`HumanDuration`. Pure functions of the object and the current time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controlplane.api import kinds, volumes
from controlplane.api.display import (
    age,
    name,
    spec,
    status,
)
from controlplane.api.kinds.definition import Printer, columns

Object = dict[str, Any]

Row = Callable[[Object, float, bool], list[str]]


def _podgroup_row(obj: Object, now: float, wide: bool) -> list[str]:
    return [
        name(obj),
        str(spec(obj).get("minMember", "")),
        str(status(obj).get("phase") or "Pending"),
        age(obj, now),
    ]


def _storageclass_row(obj: Object, now: float, wide: bool) -> list[str]:
    return [
        name(obj) + (" (default)" if volumes.is_default_class(obj) else ""),
        str(obj.get("provisioner", "")),
        str(obj.get("reclaimPolicy", "Delete")),
        str(obj.get("volumeBindingMode", "Immediate")),
        str(bool(obj.get("allowVolumeExpansion"))).lower(),
        age(obj, now),
    ]


def _queue_row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    return [
        name(obj),
        str(spec(obj).get("weight", 1)),
        str(st.get("state") or "Open"),
        *(str(st.get(k) or 0) for k in ("inqueue", "pending", "running")),
        age(obj, now),
    ]


def _vcjob_row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    replicas = sum(int(t.get("replicas") or 0) for t in spec(obj).get("tasks") or ())
    return [
        name(obj),
        str((st.get("state") or {}).get("phase") or "Pending"),
        str(spec(obj).get("minAvailable", "")),
        str(replicas),
        *(str(st.get(k) or 0) for k in ("running", "succeeded", "failed", "retryCount")),
        age(obj, now),
    ]


def _default_row(obj: Object, now: float, wide: bool) -> list[str]:
    return [name(obj), age(obj, now)]


DEFAULT = Printer(columns(("NAME", "AGE")), _default_row)


# Kind -> (headers, wide extra headers, row function)
COLUMNS: dict[str, tuple[list[str], list[str], Row]] = {
    "PodGroup": (["NAME", "MIN-MEMBER", "PHASE", "AGE"], [], _podgroup_row),
    "Queue": (["NAME", "WEIGHT", "STATE", "INQUEUE", "PENDING", "RUNNING", "AGE"], [], _queue_row),
    "Job.batch.volcano.sh": (
        ["NAME", "PHASE", "MIN", "REPLICAS", "RUNNING", "SUCCEEDED", "FAILED", "RETRIES", "AGE"],
        [],
        _vcjob_row,
    ),
    "StorageClass": (
        [
            "NAME",
            "PROVISIONER",
            "RECLAIMPOLICY",
            "VOLUMEBINDINGMODE",
            "ALLOWVOLUMEEXPANSION",
            "AGE",
        ],
        [],
        _storageclass_row,
    ),
}


def _printer(kind: str) -> Printer | None:
    definition = kinds.find(kind)
    printer = definition.printer if definition is not None else None
    if printer is None and kind in COLUMNS:
        base, extra, row = COLUMNS[kind]
        cols = columns(tuple(base), tuple(extra))
        printer = Printer(cols, row)
    return printer


def printer_of(kind: str) -> Printer:
    """The kind's table columns and row function (NAME, AGE when it has none)."""
    return _printer(kind) or DEFAULT


def headers_for(kind: str, wide: bool) -> list[str]:
    return printer_of(kind).headers(wide)


def row_for(kind: str, obj: Object, now: float, wide: bool) -> list[str]:
    return printer_of(kind).row(obj, now, wide)
