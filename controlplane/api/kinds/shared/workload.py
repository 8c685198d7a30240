"""What the workloads that keep pods from a template share (ReplicaSet,
Deployment, StatefulSet, DaemonSet, and Job for its columns): the spec's
common rules and the CONTAINERS/IMAGES cells of their wide tables. Pure."""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors, integer, mapping, selector
from controlplane.api.display import NONE, age, name, selector_string, spec, status
from controlplane.api.kinds.shared import podspec

Object = dict[str, Any]

WIDE = ("CONTAINERS", "IMAGES", "SELECTOR")  # the wide columns of most workloads


def validate(e: Errors, obj: Object, old: Object | None, restart: tuple[str, ...]) -> None:
    """replicas, minReadySeconds, revisionHistoryLimit, a non-empty selector
    (immutable) matching the pod template's labels, the template."""
    workload_spec: Any = obj.get("spec")
    if not mapping(e, "spec", workload_spec, required=True):
        return
    integer(e, "spec.replicas", workload_spec.get("replicas"), 0)
    integer(e, "spec.minReadySeconds", workload_spec.get("minReadySeconds"), 0)
    integer(e, "spec.revisionHistoryLimit", workload_spec.get("revisionHistoryLimit"), 0)
    selector(e, "spec.selector", workload_spec.get("selector"))
    podspec.validate_template(
        e, "spec.template", workload_spec.get("template"), workload_spec.get("selector"), restart
    )
    if old is not None and (old.get("spec") or {}).get("selector") != workload_spec.get("selector"):
        e.add("spec.selector", "field is immutable")


def replica_cells(obj: Object, now: float) -> list[str]:
    """NAME DESIRED CURRENT READY AGE: a ReplicaSet's or ReplicationController's cells."""
    st = status(obj)
    return [
        name(obj),
        str(spec(obj).get("replicas", 1)),
        str(st.get("replicas", 0)),
        str(st.get("readyReplicas", 0)),
        age(obj, now),
    ]


def images(obj: Object) -> list[str]:
    """The CONTAINERS and IMAGES cells: the template's container names and images."""
    containers = ((spec(obj).get("template") or {}).get("spec") or {}).get("containers") or []
    return [
        ",".join(str(c.get("name", "")) for c in containers) or NONE,
        ",".join(str(c.get("image", "")) for c in containers) or NONE,
    ]


def wide_cells(obj: Object) -> list[str]:
    """The CONTAINERS, IMAGES and SELECTOR cells of a workload's wide table."""
    return [*images(obj), selector_string(spec(obj).get("selector"))]
