"""CronJob (batch/v1)."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import OBJECT_META, facts, under

DEFINITION = KindDef(
    KindInfo("CronJob", "batch/v1", "cronjobs", "cronjob", ("cj",), categories=("all",)),
    patch_meta=facts(
        "spec.jobTemplate.spec.template.spec",
        extra=under("spec.jobTemplate.metadata", OBJECT_META),
    ),
)
