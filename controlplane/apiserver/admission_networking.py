"""Admission for networking.k8s.io: Kubernetes' DefaultIngressClass plugin.

An Ingress created without `spec.ingressClassName` (and without the
deprecated `kubernetes.io/ingress.class` annotation) gets the default
IngressClass, the one annotated `ingressclass.kubernetes.io/is-default-class:
"true"` (of several, the newest, as Kubernetes picks since 1.28); without a
default class it stays class-less. Updates are never changed.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.kinds import KindInfo
from controlplane.apiserver.codec import Object
from controlplane.apiserver.registry import Admit, Registry

DEFAULT_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
LEGACY_ANNOTATION = "kubernetes.io/ingress.class"


def default_class(classes: list[Object]) -> str:
    defaults = [
        c
        for c in classes
        if ((c.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_ANNOTATION) == "true"
    ]
    if not defaults:
        return ""
    newest = max(
        defaults,
        key=lambda c: (str(c["metadata"].get("creationTimestamp") or ""), c["metadata"]["name"]),
    )
    return str(newest["metadata"]["name"])


def admit_ingress(registry: Registry, info: KindInfo, obj: Object, old: Object | None) -> None:
    if old is not None:
        return
    spec: dict[str, Any] = obj.setdefault("spec", {})
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if spec.get("ingressClassName") or LEGACY_ANNOTATION in annotations:
        return
    name = default_class(registry.cached_objects("IngressClass"))
    if name:
        spec["ingressClassName"] = name


ADMISSION: dict[str, Admit] = {"Ingress": admit_ingress}
