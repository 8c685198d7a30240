"""Volcano's Command (bus.volcano.sh/v1alpha1): a user's one-shot order to a Job or Queue.

Validation: a target (an ownerReference) that is a Volcano Job or a Queue,
an action that kind takes, both immutable.
"""

from __future__ import annotations

from typing import Any

from controlplane.api import volcano
from controlplane.api.checks import Errors
from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    target = obj.get("target")
    if not isinstance(target, dict):
        e.add("target", "required: the ownerReference of the Job or Queue to act on")
        return
    for field in ("apiVersion", "kind", "name"):
        if not isinstance(target.get(field), str) or not target.get(field):
            e.add(f"target.{field}", "required")
    found = volcano.command_target(obj)
    if found is None:
        if all(isinstance(target.get(f), str) and target.get(f) for f in ("apiVersion", "kind")):
            e.add(
                "target",
                f"{target.get('kind')} ({target.get('apiVersion')}) takes no commands: "
                f"a target is a Job ({volcano.BATCH_API}) or a Queue ({volcano.SCHEDULING_API})",
            )
        return
    allowed = volcano.JOB_COMMANDS if found[0] == "Job" else volcano.QUEUE_COMMANDS
    action = obj.get("action")
    if action not in allowed:
        e.add("action", f"unsupported value {action!r} for a {found[0]}: supported: "
                        f"{', '.join(allowed)}")  # fmt: skip
    for field in ("reason", "message"):
        if obj.get(field) is not None and not isinstance(obj.get(field), str):
            e.add(field, "must be a string")
    if old is not None:
        for field in ("action", "target"):
            if obj.get(field) != old.get(field):
                e.add(field, "field is immutable")


DEFINITION = KindDef(
    KindInfo("Command", "bus.volcano.sh/v1alpha1", has_status=False),
    validate=validate,
)
