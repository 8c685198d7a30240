"""Volcano's Job (batch.volcano.sh/v1alpha1, key Job.batch.volcano.sh)."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo

DEFINITION = KindDef(
    KindInfo(
        "Job",
        "batch.volcano.sh/v1alpha1",
        "jobs",
        "job",
        ("vcjob", "vj"),
        qualified=True,
    ),
)
