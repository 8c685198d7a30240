"""ReplicaSet (apps/v1)."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, TEMPLATE, facts

DEFINITION = KindDef(
    KindInfo(
        "ReplicaSet",
        "apps/v1",
        "replicasets",
        "replicaset",
        ("rs",),
        has_scale=True,
        categories=("all",),
    ),
    patch_meta=facts(TEMPLATE, CONDITIONS),
)
