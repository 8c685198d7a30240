"""ServiceAccount (v1)."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef, Subresource
from controlplane.api.kinds.info import KindInfo

DEFINITION = KindDef(
    KindInfo(
        "ServiceAccount", "v1", "serviceaccounts", "serviceaccount", ("sa",), has_status=False
    ),
    subresources=(
        Subresource("token", ("create",), "authentication.k8s.io", "v1", "TokenRequest"),
    ),
)
