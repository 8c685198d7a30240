"""Event (v1, also served as events.k8s.io/v1)."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import facts

DEFINITION = KindDef(
    KindInfo(
        "Event",
        "v1",
        "events",
        "event",
        ("ev",),
        has_status=False,
        also_api_versions=("events.k8s.io/v1",),
    ),
    patch_meta=facts(),
)
