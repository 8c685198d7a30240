"""Volcano's Command (bus.volcano.sh/v1alpha1): a user's one-shot order to a Job or Queue."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo

DEFINITION = KindDef(
    KindInfo("Command", "bus.volcano.sh/v1alpha1", "commands", "command", (), has_status=False),
)
