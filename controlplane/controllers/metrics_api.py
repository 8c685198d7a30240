"""The HPA's MetricsSource backed by the metrics API (metrics.k8s.io/v1beta1).

As kube-controller-manager's resource metrics client: the PodMetrics of the
HPA's namespace are read through the API server (GET
/apis/metrics.k8s.io/v1beta1/namespaces/<ns>/pods), whoever serves them:
skiff's built-in metrics API or a metrics-server registered as the
APIService v1beta1.metrics.k8s.io. A pod's usage of a resource is the sum
of its containers'; a pod one of whose containers lacks it has none. CPU
is in cores, memory in bytes, with the timestamp and window the API gives.
An API that cannot answer leaves every pod without metrics (the HPA says
so in its conditions). Pods, Object and External metrics come from the
custom.metrics.k8s.io/v1beta2 and external.metrics.k8s.io/v1beta1 APIs a
metrics adapter registers (hpa_custom.py). It never writes anything.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, urlencode

from controlplane.api import kinds
from controlplane.api.quantity import parse_quantity
from controlplane.client import errors
from controlplane.client.apirest import get
from controlplane.client.config import ClientConfig
from controlplane.controllers.hpa_calc import MetricSample
from machinery import rfc3339

log = logging.getLogger("skiff.controllers.metrics")

PATH = "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods"
CUSTOM = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/{namespace}"
EXTERNAL = "/apis/external.metrics.k8s.io/v1beta1/namespaces/{namespace}/{metric}"


def _seconds(window: Any) -> float:
    text = str(window or "")
    try:
        if text.endswith("ms"):
            return float(text[:-2]) / 1000
        if text.endswith("s"):
            return float(text[:-1])
    except ValueError:
        pass
    return 60.0


def samples(doc: dict[str, Any], resource: str) -> dict[str, MetricSample]:
    """pod name -> usage of `resource`, from a PodMetricsList."""
    out: dict[str, MetricSample] = {}
    for item in doc.get("items") or []:
        if not isinstance(item, dict):
            continue
        name = str((item.get("metadata") or {}).get("name") or "")
        total, complete = 0.0, bool(item.get("containers"))
        for container in item.get("containers") or []:
            value = ((container or {}).get("usage") or {}).get(resource)
            try:
                total += float(parse_quantity(str(value)))
            except ValueError:
                complete = False
                break
        if name and complete:
            ts = rfc3339.parse_time(item.get("timestamp")) or 0.0
            out[name] = MetricSample(total, ts, _seconds(item.get("window")))
    return out


class MetricsApiSource:
    def __init__(
        self, config: ClientConfig, fetch: Callable[[str], dict[str, Any]] | None = None,
        timeout: float = 10.0,
    ) -> None:  # fmt: skip
        """`fetch(path)` reads a document (default: GET on the API server in `config`)."""
        self._config = config
        self._timeout = timeout
        self._fetch = fetch or self._get

    def _get(self, path: str) -> dict[str, Any]:
        response = get(self._config, path, self._timeout)
        try:
            doc = json.loads(response.read())
        finally:
            response.close()
        return doc if isinstance(doc, dict) else {}

    def _query(self, path: str, **params: str) -> dict[str, Any]:
        query = urlencode({k: v for k, v in params.items() if v})
        return self._fetch(f"{path}?{query}" if query else path)

    def custom_pod_metrics(
        self, namespace: str, metric: str, selector: str
    ) -> dict[str, MetricSample]:
        """A custom metric of the pods `selector` matches (custom.metrics.k8s.io)."""
        base = CUSTOM.format(namespace=quote(namespace))
        doc = self._query(f"{base}/pods/*/{quote(metric)}", labelSelector=selector)
        out: dict[str, MetricSample] = {}
        for item in doc.get("items") or []:
            described = (item or {}).get("describedObject") or {}
            if described.get("kind", "Pod") != "Pod":
                continue
            ts = rfc3339.parse_time(item.get("timestamp")) or 0.0
            window = float(item.get("windowSeconds") or 60)
            value = float(parse_quantity(str(item.get("value"))))
            out[str(described.get("name") or "")] = MetricSample(value, ts, window)
        return out

    def object_metric(
        self, namespace: str, described: Mapping[str, Any], metric: str, selector: str
    ) -> float:
        """A custom metric of one object (custom.metrics.k8s.io): its value."""
        kind, name = str(described.get("kind") or ""), str(described.get("name") or "")
        api_version = str(described.get("apiVersion") or "v1")
        try:  # its resource as the kinds table names it (deployments.apps)
            resource = kinds.for_object(api_version, kind).resource
        except kinds.UnknownKind:  # a kind this process does not serve: English plural
            group = api_version.rpartition("/")[0]
            resource = kind.lower() + ("es" if kind.lower().endswith("s") else "s")
            resource = f"{resource}.{group}" if group else resource
        base = CUSTOM.format(namespace=quote(namespace))
        path = f"{base}/{quote(resource)}/{quote(name)}/{quote(metric)}"
        items = self._query(path, metricLabelSelector=selector).get("items") or []
        if not items:
            raise ValueError(f"no value of {metric} for {kind} {name}")
        return float(parse_quantity(str(items[0].get("value"))))

    def external_metric(self, namespace: str, metric: str, selector: str) -> list[float]:
        """Every value of an external metric the selector matches (external.metrics.k8s.io)."""
        path = EXTERNAL.format(namespace=quote(namespace), metric=quote(metric))
        items = self._query(path, labelSelector=selector).get("items") or []
        return [float(parse_quantity(str((i or {}).get("value")))) for i in items]

    def pod_metrics(self, namespace: str, resource: str) -> dict[str, MetricSample]:
        try:
            doc = self._fetch(PATH.format(namespace=quote(namespace)))
        except (errors.ApiError, OSError, ValueError) as err:
            log.info("no pod metrics in %s from the metrics API: %s", namespace, err)
            return {}
        return samples(doc, resource)
