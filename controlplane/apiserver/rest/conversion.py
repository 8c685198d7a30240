"""Kinds served at a second group/version whose shape differs from the stored one.

Each kind's definition declares its conversions (KindDef.conversions:
HorizontalPodAutoscaler's autoscaling/v1). Event is stored as core v1 and also served
as events.k8s.io/v1 (regarding/note/reportingController ... <->
involvedObject/message/source ...). Each Conversion is a pair of pure
functions on whole objects; the handlers apply them only for these
group/versions, so every other request keeps the stored bytes untouched.
"""

from __future__ import annotations

from typing import Any

from controlplane.api import kinds
from controlplane.api.kinds.definition import Conversion

Object = dict[str, Any]

# events.k8s.io/v1 field <-> core v1 field, for the fields that only moved.
_EVENT_RENAMES = (
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("deprecatedSource", "source"),
    ("reportingController", "reportingComponent"),
)


def _event_to_core(obj: Object) -> Object:
    if obj.get("apiVersion") in (None, "", "v1") and "regarding" not in obj:
        return obj  # already core-shaped
    out = dict(obj)
    for new, old in _EVENT_RENAMES:
        if new in out:
            out[old] = out.pop(new)
    out["apiVersion"] = "v1"
    return out


def _event_to_events(obj: Object) -> Object:
    out = dict(obj)
    for new, old in _EVENT_RENAMES:
        if old in out:
            out[new] = out.pop(old)
    out["apiVersion"] = "events.k8s.io/v1"
    return out


CONVERSIONS: dict[tuple[str, str], Conversion] = {
    ("Event", "events.k8s.io/v1"): Conversion(_event_to_core, _event_to_events),
}


def find(kind: str, group_version: str) -> Conversion | None:
    """How objects of `kind` (a key) change shape between the stored version
    and `group_version`; None when they do not."""
    definition = kinds.find(kind)
    if definition is not None and group_version in definition.conversions:
        return definition.conversions[group_version]
    return CONVERSIONS.get((kind, group_version))
