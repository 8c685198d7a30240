"""Endpoints (v1)."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import facts

DEFINITION = KindDef(
    KindInfo("Endpoints", "v1", "endpoints", "endpoints", ("ep",), has_status=False),
    patch_meta=facts(),
)
