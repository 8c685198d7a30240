"""LocalSubjectAccessReview (authorization.k8s.io/v1, namespaced): may they,
in this namespace? A SubjectAccessReview whose resourceAttributes.namespace
is the URL's. Answered on create (controlplane/apiserver/reviews.py), never
stored."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo

DEFINITION = KindDef(
    KindInfo("LocalSubjectAccessReview", "authorization.k8s.io/v1", create_only=True),
)
