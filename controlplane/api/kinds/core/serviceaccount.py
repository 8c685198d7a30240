"""ServiceAccount (v1): an identity for pods; its token subresource answers
TokenRequests (controlplane/apiserver/reviews.py). The ServiceAccount
admission of pods is controlplane/api/serviceaccounts.py."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef, Subresource
from controlplane.api.kinds.info import KindInfo
from controlplane.api.schema import CORE, kind

DEFINITION = KindDef(
    KindInfo(
        "ServiceAccount", "v1", "serviceaccounts", "serviceaccount", ("sa",), has_status=False
    ),
    types={
        "ServiceAccount": kind(
            CORE,
            "ServiceAccount binds together a name, a principal and a set of secrets.",
            ("", "v1", "ServiceAccount"),
            secrets=("[]object", "Secrets pods running as this account may use."),
            imagePullSecrets=("[]object", "Secrets used to pull images for pods of this account."),
            automountServiceAccountToken=("boolean", "Whether pods mount its token by default."),
        ),
    },
    subresources=(
        Subresource("token", ("create",), "authentication.k8s.io", "v1", "TokenRequest"),
    ),
)
