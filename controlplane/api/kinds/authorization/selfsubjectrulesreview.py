"""SelfSubjectRulesReview (authorization.k8s.io/v1): what may I do in a
namespace? (`kubectl auth can-i --list`). Answered on create
(controlplane/apiserver/reviews.py), never stored."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo

DEFINITION = KindDef(
    KindInfo(
        "SelfSubjectRulesReview", "authorization.k8s.io/v1", namespaced=False, create_only=True
    ),
)
