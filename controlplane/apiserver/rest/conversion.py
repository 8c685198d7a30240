"""Kinds served at a second group/version whose shape differs from the stored one.

Each kind's definition declares its conversions (KindDef.conversions):
HorizontalPodAutoscaler is stored as autoscaling/v2 and also served as
autoscaling/v1, Event is stored as core v1 and also served as
events.k8s.io/v1. Each Conversion is a pair of pure functions on whole
objects; the handlers apply them only for these group/versions, so every
other request keeps the stored bytes untouched.
"""

from __future__ import annotations

from controlplane.api import kinds
from controlplane.api.kinds.definition import Conversion


def find(kind: str, group_version: str) -> Conversion | None:
    """How objects of `kind` (a key) change shape between the stored version
    and `group_version`; None when they do not."""
    definition = kinds.find(kind)
    if definition is None:
        return None
    return definition.conversions.get(group_version)
