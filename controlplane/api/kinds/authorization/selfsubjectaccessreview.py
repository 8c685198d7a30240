"""SelfSubjectAccessReview (authorization.k8s.io/v1): may I? Answered on create
(controlplane/apiserver/reviews.py), never stored."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo

DEFINITION = KindDef(
    KindInfo(
        "SelfSubjectAccessReview", "authorization.k8s.io/v1", namespaced=False, create_only=True
    ),
)
