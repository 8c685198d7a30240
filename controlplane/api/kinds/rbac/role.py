"""Role (rbac.authorization.k8s.io/v1)."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo

DEFINITION = KindDef(
    KindInfo("Role", "rbac.authorization.k8s.io/v1", "roles", "role", (), has_status=False),
    name_rule="path-segment",
)
