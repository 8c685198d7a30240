"""ServiceAccount (v1): an identity for pods; its token subresource answers
TokenRequests (controlplane/apiserver/reviews.py). The ServiceAccount
admission of pods is controlplane/api/serviceaccounts.py."""

from __future__ import annotations

from typing import Any

from controlplane.api.display import age, name
from controlplane.api.kinds.definition import KindDef, Printer, Subresource, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.schema import CORE, declare


def row(obj: dict[str, Any], now: float, wide: bool) -> list[str]:
    return [name(obj), str(len(obj.get("secrets") or [])), age(obj, now)]


DEFINITION = KindDef(
    KindInfo("ServiceAccount", "v1", short_names=("sa",), has_status=False),
    types={
        **declare(
            CORE,
            """
            ServiceAccount [v1 ServiceAccount]: ServiceAccount binds together a name, a principal
                                                and a set of secrets.
                secrets                       []object  Secrets pods running as this account may
                                                        use.
                imagePullSecrets              []object  Secrets used to pull images for pods of this
                                                        account.
                automountServiceAccountToken  boolean   Whether pods mount its token by default.
            """,
        ),
    },
    printer=Printer(columns(("NAME", "SECRETS", "AGE")), row),
    subresources=(
        Subresource("token", ("create",), "authentication.k8s.io", "v1", "TokenRequest"),
    ),
)
