"""PersistentVolume (v1)."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo

DEFINITION = KindDef(
    KindInfo(
        "PersistentVolume",
        "v1",
        "persistentvolumes",
        "persistentvolume",
        ("pv",),
        namespaced=False,
    ),
)
