"""CustomResourceDefinition (apiextensions.k8s.io/v1)."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo

DEFINITION = KindDef(
    KindInfo(
        "CustomResourceDefinition",
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        "customresourcedefinition",
        ("crd", "crds"),
        namespaced=False,
        categories=("api-extensions",),
    ),
)
