"""Volcano's Command (bus.volcano.sh/v1alpha1): a user's one-shot order to
the Job or Queue controller (`action`, `target`, `reason`, `message`, as
vcctl's job suspend/resume and queue operate create them). Validation is
Volcano's (controlplane/api/volcano.py)."""

from __future__ import annotations

from typing import Any

from controlplane.api import volcano
from controlplane.api.checks import Errors
from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    volcano.validate_command(e, obj, old)


DEFINITION = KindDef(
    KindInfo("Command", "bus.volcano.sh/v1alpha1", "commands", "command", (), has_status=False),
    validate=validate,
)
