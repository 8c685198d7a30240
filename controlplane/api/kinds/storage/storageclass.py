"""StorageClass (storage.k8s.io/v1)."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo

DEFINITION = KindDef(
    KindInfo(
        "StorageClass",
        "storage.k8s.io/v1",
        "storageclasses",
        "storageclass",
        ("sc",),
        namespaced=False,
        has_status=False,
    ),
)
