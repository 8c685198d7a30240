"""Job (batch/v1)."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, TEMPLATE, facts

DEFINITION = KindDef(
    KindInfo("Job", "batch/v1", "jobs", "job", (), categories=("all",)),
    patch_meta=facts(TEMPLATE, CONDITIONS),
)
