"""TokenRequest (authentication.k8s.io/v1): a ServiceAccount's bound token, answered on
create (controlplane/apiserver/reviews.py), never stored."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo

DEFINITION = KindDef(
    KindInfo("TokenRequest", "authentication.k8s.io/v1", create_only=True),
)
