"""The HPA's Pods, Object and External metrics (hpa_custom): kube-controller-
manager's replica rules for custom and external metrics, the status entries
`kubectl describe hpa` shows, and the requests the metrics API source sends."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from controlplane.controllers import hpa_custom
from controlplane.controllers.hpa_calc import MetricError, MetricSample, PodSample
from controlplane.controllers.metrics_api import MetricsApiSource


class Source:
    def __init__(self, pods: dict[str, float] | None = None, value: float = 0.0,
                 external: list[float] | None = None) -> None:  # fmt: skip
        self.pods, self.value, self.external = pods or {}, value, external or []
        self.asked: list[tuple[str, ...]] = []

    def custom_pod_metrics(
        self, namespace: str, metric: str, selector: str
    ) -> dict[str, MetricSample]:
        self.asked.append(("pods", namespace, metric, selector))
        return {n: MetricSample(v, 100.0, 60.0) for n, v in self.pods.items()}

    def object_metric(self, namespace: str, described: Mapping[str, Any], metric: str,
                      selector: str) -> float:  # fmt: skip
        self.asked.append(("object", namespace, str(described.get("name")), metric))
        return self.value

    def external_metric(self, namespace: str, metric: str, selector: str) -> list[float]:
        self.asked.append(("external", namespace, metric, selector))
        return self.external


def running(*names: str) -> list[PodSample]:
    return [PodSample(n, "Running", False, True, 0.0, 0.0) for n in names]


def test_pods_metric_averages_the_pods_values() -> None:
    spec = {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "10"}}
    source = Source({"a": 30.0, "b": 10.0})
    replicas, status = hpa_custom.pods_metric(source, spec, "ns", "app=w", running("a", "b"), 2,
                                              1000.0, 0.1)  # fmt: skip
    assert replicas == 4  # average 20 against 10: twice the pods
    assert status == {"type": "Pods", "pods": {"metric": {"name": "rps"},
                                               "current": {"averageValue": "20"}}}  # fmt: skip
    assert source.asked == [("pods", "ns", "rps", "app=w")]


def test_object_value_scales_the_ready_pods_and_average_value_divides() -> None:
    spec = {"metric": {"name": "rps"}, "describedObject": {"kind": "Service", "name": "web"},
            "target": {"type": "Value", "value": "50"}}  # fmt: skip
    replicas, status = hpa_custom.object_metric(Source(value=150), spec, "ns",
                                                running("a", "b"), 2, 0.1)  # fmt: skip
    assert replicas == 6 and status["object"]["current"] == {"value": "150"}
    spec["target"] = {"type": "AverageValue", "averageValue": "40"}
    replicas, status = hpa_custom.object_metric(Source(value=150), spec, "ns",
                                                running("a", "b"), 2, 0.1)  # fmt: skip
    assert replicas == 4 and status["object"]["current"] == {"averageValue": "75"}
    within = hpa_custom.object_metric(Source(value=82), spec, "ns", running("a", "b"), 2, 0.1)
    assert within[0] == 2  # 82 / (40 * 2) is within the tolerance: no change


def test_external_sums_the_selected_series() -> None:
    spec = {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "jobs"}}},
            "target": {"type": "AverageValue", "averageValue": "10"}}  # fmt: skip
    source = Source(external=[12.0, 13.5])
    replicas, status = hpa_custom.external_metric(source, spec, "ns", running("a"), 1, 0.1)
    assert replicas == 3 and status["external"]["current"] == {"averageValue": "25500m"}
    assert source.asked == [("external", "ns", "queue", "q=jobs")]
    with pytest.raises(MetricError, match="no metrics returned from external metrics API"):
        hpa_custom.external_metric(Source(), spec, "ns", running("a"), 1, 0.1)


def test_the_metrics_api_source_asks_the_adapters_paths() -> None:
    asked: list[str] = []

    def fetch(path: str) -> dict[str, Any]:
        asked.append(path)
        if "external.metrics" in path:
            return {"items": [{"metricName": "queue", "value": "7"}, {"value": "500m"}]}
        if "/pods/*/" in path:
            return {"items": [{"describedObject": {"kind": "Pod", "name": "p1"},
                               "value": "2", "windowSeconds": 30}]}  # fmt: skip
        return {"items": [{"value": "42"}]}

    source = MetricsApiSource(None, fetch)  # type: ignore[arg-type]
    assert source.external_metric("ns", "queue", "q=jobs") == [7.0, 0.5]
    assert source.custom_pod_metrics("ns", "rps", "app=w")["p1"].window == 30
    described = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    assert source.object_metric("ns", described, "rps", "") == 42.0
    assert asked == [
        "/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/queue?labelSelector=q%3Djobs",
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/pods/*/rps?labelSelector=app%3Dw",
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/deployments.apps/web/rps",
    ]
