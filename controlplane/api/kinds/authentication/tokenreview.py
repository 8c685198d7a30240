"""TokenReview (authentication.k8s.io/v1): who is this token? Answered on create
(controlplane/apiserver/reviews.py), never stored."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo

DEFINITION = KindDef(
    KindInfo("TokenReview", "authentication.k8s.io/v1", namespaced=False, create_only=True),
)
