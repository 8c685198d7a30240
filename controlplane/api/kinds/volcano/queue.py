"""Volcano's Queue (scheduling.volcano.sh/v1beta1, cluster-scoped)."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo

DEFINITION = KindDef(
    KindInfo(
        "Queue",
        "scheduling.volcano.sh/v1beta1",
        "queues",
        "queue",
        ("q", "queue-v1beta1"),
        namespaced=False,
    ),
)
