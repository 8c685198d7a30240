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
    NONE,
    age,
    human_duration,
    labels_string,
    name,
    selector_string,
    since,
    spec,
    status,
)
from controlplane.api.kinds.definition import Printer, columns
from controlplane.api.rfc3339 import parse_time

Object = dict[str, Any]

Row = Callable[[Object, float, bool], list[str]]


def _containers(obj: Object) -> list[dict[str, Any]]:
    return list(spec(obj).get("containers") or [])


def _images(obj: Object, path: Callable[[Object], dict[str, Any]]) -> list[str]:
    containers = ((path(obj).get("template") or {}).get("spec") or {}).get("containers") or []
    return [
        ",".join(str(c.get("name", "")) for c in containers) or NONE,
        ",".join(str(c.get("image", "")) for c in containers) or NONE,
    ]


def _deployment_row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    desired = spec(obj).get("replicas", 1)
    row = [
        name(obj),
        f"{st.get('readyReplicas', 0)}/{desired}",
        str(st.get("updatedReplicas", 0)),
        str(st.get("availableReplicas", 0)),
        age(obj, now),
    ]
    if wide:
        row += [*_images(obj, spec), selector_string(spec(obj).get("selector"))]
    return row


def _replicaset_row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    row = [
        name(obj),
        str(spec(obj).get("replicas", 1)),
        str(st.get("replicas", 0)),
        str(st.get("readyReplicas", 0)),
        age(obj, now),
    ]
    if wide:
        row += [*_images(obj, spec), selector_string(spec(obj).get("selector"))]
    return row


def _statefulset_row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    row = [name(obj), f"{st.get('readyReplicas', 0)}/{spec(obj).get('replicas', 1)}", age(obj, now)]
    if wide:
        row += _images(obj, spec)
    return row


def _daemonset_row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    node_selector = ((spec(obj).get("template") or {}).get("spec") or {}).get("nodeSelector")
    row = [
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
        row += [*_images(obj, spec), selector_string(spec(obj).get("selector"))]
    return row


def _job_row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    conditions = {c.get("type"): c.get("status") for c in st.get("conditions") or []}
    if conditions.get("Complete") == "True":
        state = "Complete"
    elif conditions.get("Failed") == "True":
        state = "Failed"
    elif conditions.get("Suspended") == "True":
        state = "Suspended"
    else:
        state = "Running"
    completions = spec(obj).get("completions")
    shown = f"{st.get('succeeded', 0)}/{completions if completions is not None else 1}"
    start, end = parse_time(st.get("startTime")), parse_time(st.get("completionTime"))
    duration = "" if start is None else human_duration((end if end is not None else now) - start)
    row = [name(obj), state, shown, duration, age(obj, now)]
    if wide:
        row += [*_images(obj, spec), selector_string(spec(obj).get("selector"))]
    return row


def _cronjob_row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    last = st.get("lastScheduleTime")
    return [
        name(obj),
        str(spec(obj).get("schedule", "")),
        str(spec(obj).get("timeZone") or NONE),
        "True" if spec(obj).get("suspend") else "False",
        str(len(st.get("active") or [])),
        since(last, now) if last else NONE,
        age(obj, now),
    ]


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


_WIDE_IMAGES = ["CONTAINERS", "IMAGES", "SELECTOR"]

# Kind -> (headers, wide extra headers, row function)
COLUMNS: dict[str, tuple[list[str], list[str], Row]] = {
    "Deployment": (
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        _WIDE_IMAGES,
        _deployment_row,
    ),
    "ReplicaSet": (["NAME", "DESIRED", "CURRENT", "READY", "AGE"], _WIDE_IMAGES, _replicaset_row),
    "StatefulSet": (["NAME", "READY", "AGE"], ["CONTAINERS", "IMAGES"], _statefulset_row),
    "DaemonSet": (
        ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"],
        _WIDE_IMAGES,
        _daemonset_row,
    ),
    "Job": (["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"], _WIDE_IMAGES, _job_row),
    "CronJob": (
        ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"],
        [],
        _cronjob_row,
    ),
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
