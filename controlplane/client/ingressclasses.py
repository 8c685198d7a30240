"""Which Ingresses an ingress controller serves, from the IngressClasses.

Both halves of the built-in controller (the control plane's status writer
and the agents' HAProxy) and anything else that must agree with them ask
here. An Ingress belongs to a controller when

- its `spec.ingressClassName` names an IngressClass whose `spec.controller`
  is that controller;
- or it names no class and carries the deprecated
  `kubernetes.io/ingress.class` annotation with such a class's name (as
  ingress-nginx and Traefik read it);
- or it names no class at all and the cluster's default IngressClass (the
  newest annotated `ingressclass.kubernetes.io/is-default-class: "true"`,
  the one the API server's admission gives new Ingresses) is such a class:
  an Ingress made before its default class existed is served too, as k3s'
  Traefik serves class-less Ingresses.

An Ingress being deleted belongs to no one. Pure functions of the dicts an
informer caches; nothing here reads the API.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
LEGACY_CLASS_ANNOTATION = "kubernetes.io/ingress.class"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def classes_of(controller: str, classes: Iterable[Mapping[str, Any]]) -> set[str]:
    """The names of the IngressClasses whose `spec.controller` is `controller`."""
    return {
        str(_meta(c).get("name"))
        for c in classes
        if (c.get("spec") or {}).get("controller") == controller
    }


def default_class(classes: Iterable[Mapping[str, Any]]) -> str:
    """The default IngressClass's name ("" when none): of several, the newest."""
    defaults = [
        c
        for c in classes
        if (_meta(c).get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"
    ]
    if not defaults:
        return ""
    newest = max(
        defaults,
        key=lambda c: (str(_meta(c).get("creationTimestamp") or ""), str(_meta(c)["name"])),
    )
    return str(_meta(newest)["name"])


def class_of(ingress: Mapping[str, Any], classes: Iterable[Mapping[str, Any]]) -> str:
    """The name of the IngressClass that governs `ingress` ("" when none)."""
    named = (ingress.get("spec") or {}).get("ingressClassName")
    if named:
        return str(named)
    legacy = (_meta(ingress).get("annotations") or {}).get(LEGACY_CLASS_ANNOTATION)
    if legacy:
        return str(legacy)
    return default_class(classes)


def served_by(
    controller: str,
    ingresses: Iterable[Mapping[str, Any]],
    classes: Iterable[Mapping[str, Any]],
) -> list[Mapping[str, Any]]:
    """The Ingresses `controller` serves (see the module docstring), in the
    order given."""
    classes = list(classes)
    mine = classes_of(controller, classes)
    if not mine:
        return []
    return [
        ing
        for ing in ingresses
        if not _meta(ing).get("deletionTimestamp") and class_of(ing, classes) in mine
    ]
