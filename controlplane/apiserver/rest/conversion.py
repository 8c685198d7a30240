"""Kinds served at a second group/version whose shape differs from the stored one.

HorizontalPodAutoscaler is stored as autoscaling/v2 and also served as
autoscaling/v1 (targetCPUUtilizationPercentage <-> a cpu Utilization
metric; the v2-only parts ride in the annotations Kubernetes uses,
autoscaling.alpha.kubernetes.io/metrics and .../behavior, so a v1
read-modify-write keeps them). Event is stored as core v1 and also served
as events.k8s.io/v1 (regarding/note/reportingController ... <->
involvedObject/message/source ...). Each Conversion is a pair of pure
functions on whole objects; the handlers apply them only for these
group/versions, so every other request keeps the stored bytes untouched.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Object = dict[str, Any]

METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
CURRENT_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"


@dataclass(frozen=True)
class Conversion:
    to_stored: Callable[[Object], Object]  # the served version's object -> the stored one
    from_stored: Callable[[Object], Object]  # and back


def _is_cpu_utilization(metric: Any) -> bool:
    resource = (metric or {}).get("resource") or {}
    target = resource.get("target") or {}
    return bool(
        metric.get("type") == "Resource"
        and resource.get("name") == "cpu"
        and target.get("type") == "Utilization"
    )


def _hpa_to_v1(obj: Object) -> Object:
    out = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    out["apiVersion"] = "autoscaling/v1"
    meta = dict(obj.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    spec = dict(obj.get("spec") or {})
    metrics = spec.pop("metrics", None) or []
    behavior = spec.pop("behavior", None)
    cpu = next((m for m in metrics if _is_cpu_utilization(m)), None)
    others = [m for m in metrics if m is not cpu]
    if cpu is not None:
        spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"].get("averageUtilization")
    if others:
        annotations[METRICS_ANNOTATION] = json.dumps(others, separators=(",", ":"))
    if behavior is not None:
        annotations[BEHAVIOR_ANNOTATION] = json.dumps(behavior, separators=(",", ":"))
    out["spec"] = spec
    status = dict(obj.get("status") or {})
    current = status.pop("currentMetrics", None) or []
    conditions = status.pop("conditions", None)
    for metric in current:
        resource = (metric or {}).get("resource") or {}
        if metric.get("type") == "Resource" and resource.get("name") == "cpu":
            utilization = (resource.get("current") or {}).get("averageUtilization")
            if utilization is not None:
                status["currentCPUUtilizationPercentage"] = utilization
    if current:
        annotations[CURRENT_ANNOTATION] = json.dumps(current, separators=(",", ":"))
    if conditions:
        annotations[CONDITIONS_ANNOTATION] = json.dumps(conditions, separators=(",", ":"))
    if "status" in obj:
        out["status"] = status
    if annotations:
        meta["annotations"] = annotations
    out["metadata"] = meta
    return out


def _annotation_json(annotations: dict[str, Any], key: str) -> Any:
    text = annotations.pop(key, None)
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _hpa_to_v2(obj: Object) -> Object:
    out = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    out["apiVersion"] = "autoscaling/v2"
    meta = dict(obj.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    spec = dict(obj.get("spec") or {})
    metrics = _annotation_json(annotations, METRICS_ANNOTATION) or []
    behavior = _annotation_json(annotations, BEHAVIOR_ANNOTATION)
    target = spec.pop("targetCPUUtilizationPercentage", None)
    if target is not None:
        cpu = {"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}}}  # fmt: skip
        metrics = [cpu, *[m for m in metrics if not _is_cpu_utilization(m)]]
    if metrics:
        spec["metrics"] = metrics
    if behavior is not None:
        spec["behavior"] = behavior
    out["spec"] = spec
    current = _annotation_json(annotations, CURRENT_ANNOTATION)
    conditions = _annotation_json(annotations, CONDITIONS_ANNOTATION)
    if "status" in obj:
        status = dict(obj.get("status") or {})
        status.pop("currentCPUUtilizationPercentage", None)
        if current:
            status["currentMetrics"] = current
        if conditions:
            status["conditions"] = conditions
        out["status"] = status
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out["metadata"] = meta
    return out


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
    ("HorizontalPodAutoscaler", "autoscaling/v1"): Conversion(_hpa_to_v2, _hpa_to_v1),
    ("Event", "events.k8s.io/v1"): Conversion(_event_to_core, _event_to_events),
}


def extra_versions(kind: str) -> tuple[str, ...]:
    return tuple(gv for (k, gv) in CONVERSIONS if k == kind)


def find(kind: str, group_version: str) -> Conversion | None:
    return CONVERSIONS.get((kind, group_version))
