"""Admission of Volcano's Job and PodGroup: the queue they name must exist and be Open.

Volcano's webhook refuses a Job submitted to a missing queue ("unable to find
job queue") or to one whose state is not Open; a PodGroup gets the same check
(a plain pod's PodGroup made by the pg-controller names the default queue).
Only on create: a running job whose queue closes keeps running. The `default`
Queue exists from the start (server bootstrap).
"""

from __future__ import annotations

from controlplane.api import volcano
from controlplane.api.kinds import KindInfo
from controlplane.apiserver.codec import Object
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import Invalid, NotFound


def _check_queue(registry: Registry, field: str, name: str) -> None:
    try:
        queue = registry.get_object("Queue", name, None)
    except NotFound:
        raise Invalid(f"{field}: unable to find job queue: {name}") from None
    state = (queue.get("status") or {}).get("state") or "Open"
    if state != "Open":
        raise Invalid(
            f"{field}: can only submit job to queue with state `Open`, "
            f"queue `{name}` status is `{state}`"
        )


def admit_vcjob(registry: Registry, info: KindInfo, obj: Object, old: Object | None) -> None:
    if old is None:
        spec = obj.get("spec") or {}
        _check_queue(registry, "spec.queue", str(spec.get("queue") or volcano.DEFAULT_QUEUE))


def admit_podgroup(registry: Registry, info: KindInfo, obj: Object, old: Object | None) -> None:
    if old is None:
        spec = obj.get("spec") or {}
        _check_queue(registry, "spec.queue", str(spec.get("queue") or volcano.DEFAULT_QUEUE))


ADMISSION = {
    volcano.JOB_KEY: admit_vcjob,
    "PodGroup": admit_podgroup,
}
