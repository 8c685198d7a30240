"""Volcano's Queue (scheduling.volcano.sh/v1beta1, cluster-scoped): its validation and admission.

Validation: a positive weight; capability, deserved and guarantee are
resource quantities >= 0; reclaimable is a boolean; the state is one of
Volcano's. Admission (Volcano's queue webhook): a queue's `spec.parent`
(none or `root`: the top) is not itself and exists. `check_open` and
`children` serve the Job's and PodGroup's admission: the queue they name
must exist and be Open, and a Job's must be a leaf. Defaults (weight 1,
reclaimable, Open): controlplane/api/volcano.py's. Columns: NAME WEIGHT
STATE INQUEUE PENDING RUNNING AGE.
"""

from __future__ import annotations

from typing import Any

from controlplane.api import volcano
from controlplane.api.checks import Errors
from controlplane.api.display import age, name, spec, status
from controlplane.api.kinds.definition import AdmissionApi, KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.quantity import parse_quantity
from controlplane.client.errors import Invalid, NotFound

Object = dict[str, Any]
ROOT = "root"  # Volcano's top of the queue hierarchy


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    spec = obj.get("spec") or {}
    if not isinstance(spec, dict):
        e.add("spec", "must be an object")
        return
    weight = spec.get("weight")
    if weight is not None and (
        isinstance(weight, bool) or not isinstance(weight, int) or weight <= 0
    ):
        e.add("spec.weight", f"queue weight must be a positive integer, not {weight!r}")
    for field in ("capability", "deserved"):
        volcano.resources(e, f"spec.{field}", spec.get(field), parse_quantity)
    guarantee = spec.get("guarantee")
    if guarantee is not None:
        if not isinstance(guarantee, dict):
            e.add("spec.guarantee", "must be an object with `resource`")
        else:
            volcano.resources(e, "spec.guarantee.resource", guarantee.get("resource"),
                              parse_quantity)  # fmt: skip
    if "reclaimable" in spec and not isinstance(spec["reclaimable"], bool):
        e.add("spec.reclaimable", "must be a boolean")
    parent = spec.get("parent")
    if parent is not None and not isinstance(parent, str):
        e.add("spec.parent", "must be a queue name")
    state = (obj.get("status") or {}).get("state")
    if state is not None and state not in volcano.QUEUE_STATES:
        e.add("status.state",
              f"unsupported value {state!r}: supported: {', '.join(volcano.QUEUE_STATES)}")  # fmt: skip


def children(api: AdmissionApi, name: str) -> list[str]:
    """The queues whose parent is `name`."""
    return [
        str(q["metadata"]["name"])
        for q in api.cached_objects("Queue")
        if (q.get("spec") or {}).get("parent") == name
    ]


def check_open(api: AdmissionApi, field: str, name: str) -> None:
    """The queue exists and is Open (Volcano's webhooks' words otherwise)."""
    try:
        queue = api.get_object("Queue", name, None)
    except NotFound as err:
        raise Invalid(f"{field}: unable to find job queue: {err}") from None
    state = (queue.get("status") or {}).get("state") or "Open"
    if state != "Open":
        raise Invalid(f"{field}: can only submit job to queue with state `Open`, "
                      f"queue `{name}` status is `{state}`")  # fmt: skip


def admit(api: AdmissionApi, info: KindInfo, obj: Object, old: Object | None) -> None:
    """Volcano's validateHierarchicalQueue: a parent that is not itself and exists."""
    name = str((obj.get("metadata") or {}).get("name") or "")
    parent = (obj.get("spec") or {}).get("parent")
    if not parent or parent == ROOT or parent == (((old or {}).get("spec") or {}).get("parent")):
        return
    if parent == name:
        raise Invalid(f"spec.parent: queue {name} cannot use itself as parent")
    try:
        api.get_object("Queue", parent, None)
    except NotFound as err:
        raise Invalid(f"spec.parent: failed to get parent queue of queue {name}: {err}") from None


def row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    return [
        name(obj),
        str(spec(obj).get("weight", 1)),
        str(st.get("state") or "Open"),
        *(str(st.get(k) or 0) for k in ("inqueue", "pending", "running")),
        age(obj, now),
    ]


DEFINITION = KindDef(
    KindInfo(
        "Queue",
        "scheduling.volcano.sh/v1beta1",
        "queues",
        "queue",
        ("q", "queue-v1beta1"),
        namespaced=False,
    ),
    defaults=volcano.default_queue,
    validate=validate,
    admit=admit,
    printer=Printer(
        columns(("NAME", "WEIGHT", "STATE", "INQUEUE", "PENDING", "RUNNING", "AGE")), row
    ),
)
