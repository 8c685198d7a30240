"""Volcano's Queue (scheduling.volcano.sh/v1beta1, cluster-scoped): a share
of the cluster that Jobs and PodGroups are submitted to.

Validation and defaults are Volcano's (controlplane/api/volcano.py: weight,
capability/deserved/guarantee, state; weight 1, reclaimable, Open).
`check_open` is the admission Volcano's webhook does for what is submitted
to a queue: it must exist and be Open. Columns: NAME WEIGHT STATE INQUEUE
PENDING RUNNING AGE.
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


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    volcano.validate_queue(e, obj, old, parse_quantity)


def check_open(api: AdmissionApi, field: str, queue_name: str) -> None:
    """Volcano's webhook: the queue a Job or PodGroup names exists and is Open."""
    try:
        queue = api.get_object("Queue", queue_name, None)
    except NotFound:
        raise Invalid(f"{field}: unable to find job queue: {queue_name}") from None
    state = (queue.get("status") or {}).get("state") or "Open"
    if state != "Open":
        raise Invalid(
            f"{field}: can only submit job to queue with state `Open`, "
            f"queue `{queue_name}` status is `{state}`"
        )


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
    printer=Printer(
        columns(("NAME", "WEIGHT", "STATE", "INQUEUE", "PENDING", "RUNNING", "AGE")), row
    ),
)
