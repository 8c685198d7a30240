"""The HPA's Pods, Object and External metrics (custom and external metrics APIs).

As kube-controller-manager's replica calculator, for metrics a metrics
adapter serves through aggregation (custom.metrics.k8s.io/v1beta2 and
external.metrics.k8s.io/v1beta1, registered as APIServices):

- Pods (AverageValue): the pods' values averaged, the same plain-metric
  calculation as a Resource AverageValue (hpa_calc, no CPU readiness rules);
- Object: Value: ratio = value / target, replicas = ceil(ratio * ready pods);
  AverageValue: ratio = value / (target * replicas), replicas =
  ceil(value / target);
- External: as Object, with the sum of the values the selector matches.

A ratio within the tolerance keeps the current count. Each function returns
(replicas, the status entry for currentMetrics) or raises MetricError with
the reason the HPA reports (FailedGetPodsMetric, ...).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from controlplane.api.quantity import parse_quantity
from controlplane.controllers import hpa_calc
from controlplane.controllers.hpa_calc import MetricError, MetricSample, PodSample

Object = dict[str, Any]


class CustomMetricsSource(Protocol):
    def custom_pod_metrics(
        self, namespace: str, metric: str, selector: str
    ) -> dict[str, MetricSample]: ...

    def object_metric(
        self, namespace: str, described: Mapping[str, Any], metric: str, selector: str
    ) -> float: ...

    def external_metric(self, namespace: str, metric: str, selector: str) -> list[float]: ...


def quantity(value: float) -> str:
    if value == int(value):
        return str(int(value))
    return f"{round(value * 1000)}m"


def _target(target: Mapping[str, Any], kind: str) -> float:
    raw = target.get("value" if kind == "Value" else "averageValue")
    if raw is None:
        raise MetricError(
            f"target type {kind} needs {'value' if kind == 'Value' else 'averageValue'}"
        )
    return float(parse_quantity(str(raw)))


def _selector(metric: Mapping[str, Any]) -> str:
    selector = metric.get("selector") or {}
    labels = selector.get("matchLabels") or {}
    parts = [f"{k}={v}" for k, v in sorted(labels.items())]
    for expr in selector.get("matchExpressions") or []:
        op, key, values = expr.get("operator"), expr.get("key"), expr.get("values") or []
        if op in ("In", "NotIn"):
            parts.append(f"{key} {op.lower()} ({','.join(values)})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def _ready(pods: Sequence[PodSample]) -> int:
    return sum(1 for p in pods if p.phase == "Running" and p.ready and not p.deleting)


def _by_ratio(current: int, ratio: float, proposed: int, tolerance: float) -> int:
    return current if abs(1.0 - ratio) <= tolerance else proposed


def pods_metric(
    source: CustomMetricsSource, spec: Mapping[str, Any], ns: str, pod_selector: str,
    pods: Sequence[PodSample], current: int, now: float, tolerance: float,
) -> tuple[int, Object]:  # fmt: skip
    metric = spec.get("metric") or {}
    target = spec.get("target") or {}
    average = _target(target, "AverageValue")
    samples = source.custom_pod_metrics(ns, str(metric.get("name", "")), pod_selector)
    result = hpa_calc.replicas_for_resource(current, pods, samples, "", now,
                                            target_average_value=average, tolerance=tolerance)  # fmt: skip
    entry = {"metric": dict(metric), "current": {"averageValue": quantity(result.raw_average)}}
    return result.replicas, {"type": "Pods", "pods": entry}


def _value_replicas(
    value: float, target: Mapping[str, Any], pods: Sequence[PodSample], current: int,
    tolerance: float,
) -> tuple[int, Object]:  # fmt: skip
    """The replicas an Object or External metric's `value` asks for against
    its target (an AverageValue per replica, or a Value), and its current entry."""
    if str(target.get("type") or "Value") == "AverageValue":
        average = _target(target, "AverageValue")
        ratio = value / (average * max(current, 1))
        replicas = _by_ratio(current, ratio, math.ceil(value / average), tolerance)
        return replicas, {"averageValue": quantity(value / max(current, 1))}
    ratio = value / _target(target, "Value")
    replicas = _by_ratio(current, ratio, math.ceil(ratio * _ready(pods)), tolerance)
    return replicas, {"value": quantity(value)}


def object_metric(
    source: CustomMetricsSource, spec: Mapping[str, Any], ns: str,
    pods: Sequence[PodSample], current: int, tolerance: float,
) -> tuple[int, Object]:  # fmt: skip
    metric = spec.get("metric") or {}
    described = spec.get("describedObject") or {}
    target = spec.get("target") or {}
    value = source.object_metric(ns, described, str(metric.get("name", "")), _selector(metric))
    entry: Object = {"metric": dict(metric), "describedObject": dict(described)}
    replicas, entry["current"] = _value_replicas(value, target, pods, current, tolerance)
    return replicas, {"type": "Object", "object": entry}


def external_metric(
    source: CustomMetricsSource, spec: Mapping[str, Any], ns: str,
    pods: Sequence[PodSample], current: int, tolerance: float,
) -> tuple[int, Object]:  # fmt: skip
    metric = spec.get("metric") or {}
    target = spec.get("target") or {}
    values = source.external_metric(ns, str(metric.get("name", "")), _selector(metric))
    if not values:
        raise MetricError(f"no metrics returned from external metrics API for {metric.get('name')}")
    usage = sum(values)
    entry: Object = {"metric": dict(metric)}
    replicas, entry["current"] = _value_replicas(usage, target, pods, current, tolerance)
    return replicas, {"type": "External", "external": entry}
