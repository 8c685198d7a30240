"""The HorizontalPodAutoscaler controller (autoscaling/v2, Resource metrics).

Every `hpa_sync_period` (15 s on the injected clock) and on every change,
for each HPA: read the target's scale subresource (Deployment, ReplicaSet,
StatefulSet), list its pods by the scale's selector, read pod usage from a
`MetricsSource`, let `hpa_calc` propose replicas per metric (the largest
wins), stabilize and limit them, write the new scale, and record status
(currentReplicas, desiredReplicas, lastScaleTime, currentMetrics) with the
conditions AbleToScale, ScalingActive and ScalingLimited. A missing target
or unusable metrics are reported in conditions and events; the HPA keeps
being retried.

`MetricsSource` is the boundary to wherever usage comes from (agents will
report pod CPU/memory); `InMemoryMetrics` is the one tests and the
single-process setup use. Values are in cores for cpu and bytes for memory.
This module never computes replica counts itself: that is `hpa_calc`.
"""

from __future__ import annotations

import copy
import threading
from typing import Any, Protocol

from controlplane.api.quantity import parse_quantity
from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.client.selectors import SelectorError, parse_label_selector
from controlplane.controllers import hpa_calc, hpa_custom, podutil
from controlplane.controllers.base import Controller, ControllerContext
from controlplane.controllers.hpa_calc import MetricSample, PodSample
from machinery import rfc3339

# Metric types read from the custom and external metrics APIs (hpa_custom).
CUSTOM_TYPES = frozenset({"Pods", "Object", "External"})


class MetricsSource(Protocol):
    def pod_metrics(self, namespace: str, resource: str) -> dict[str, MetricSample]:
        """Usage of `resource` ("cpu" in cores, "memory" in bytes) by pod name."""
        ...


class InMemoryMetrics:
    """A MetricsSource fed by `set()`; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[tuple[str, str], dict[str, MetricSample]] = {}

    def set(
        self,
        namespace: str,
        pod: str,
        resource: str,
        value: float,
        timestamp: float = 0.0,
        window: float = 60.0,
    ) -> None:
        with self._lock:
            self._data.setdefault((namespace, resource), {})[pod] = MetricSample(
                value, timestamp, window
            )

    def clear(self, namespace: str | None = None) -> None:
        with self._lock:
            if namespace is None:
                self._data.clear()
            else:
                for k in [k for k in self._data if k[0] == namespace]:
                    del self._data[k]

    def pod_metrics(self, namespace: str, resource: str) -> dict[str, MetricSample]:
        with self._lock:
            return dict(self._data.get((namespace, resource), {}))


def pod_request(pod: Object, resource: str) -> float:
    total = 0.0
    for c in podutil.spec(pod).get("containers") or []:
        value = ((c.get("resources") or {}).get("requests") or {}).get(resource)
        if value is None:
            return 0.0
        try:
            total += float(parse_quantity(value))
        except ValueError:
            return 0.0
    return total


def _sample(pod: Object) -> PodSample:
    ready = podutil.condition(pod, "Ready")
    return PodSample(
        name=podutil.name_of(pod),
        phase=podutil.phase(pod),
        deleting=podutil.is_deleting(pod),
        ready=None if ready is None else ready.get("status") == "True",
        ready_transition=rfc3339.parse_time(ready.get("lastTransitionTime")) if ready else None,
        start_time=rfc3339.parse_time(podutil.status(pod).get("startTime")),
    )


class HPAController(Controller):
    name = "horizontalpodautoscaling"
    default_workers = 5

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.metrics_source: MetricsSource = ctx.metrics_source or InMemoryMetrics()
        self.hpas = self.watch("HorizontalPodAutoscaler")
        self.pods = self.watch("Pod")
        self.hpas.add_event_handler(
            on_add=self.enqueue, on_update=self._updated, on_delete=self._deleted
        )
        self._lock = threading.Lock()
        self.recommendations: dict[str, hpa_calc.Recommendations] = {}
        self.scale_ups: dict[str, list[hpa_calc.ScaleEvent]] = {}
        self.scale_downs: dict[str, list[hpa_calc.ScaleEvent]] = {}

    def _updated(self, old: Object, new: Object) -> None:
        # Our own status writes must not bypass the sync period.
        if podutil.spec(old) != podutil.spec(new) or podutil.meta(old).get(
            "annotations"
        ) != podutil.meta(new).get("annotations"):
            self.enqueue(new)

    def _deleted(self, obj: Object) -> None:
        key = f"{podutil.namespace_of(obj)}/{podutil.name_of(obj)}"
        with self._lock:
            self.recommendations.pop(key, None)
            self.scale_ups.pop(key, None)
            self.scale_downs.pop(key, None)

    def sync(self, key: str) -> float | None:
        hpa = self.hpas.store.get_by_key(key)
        if hpa is None:
            return None
        self.reconcile(key, copy.deepcopy(hpa))
        return self.config.hpa_sync_period

    def _set(
        self, conds: list[Object] | None, type_: str, status: str, reason: str, message: str
    ) -> list[Object]:
        return podutil.set_condition(conds, type_, status, reason, message, self.clock.now())

    def _failed(
        self, hpa: Object, st: dict[str, Any], conds: list[Object] | None, type_: str,
        reason: str, message: str, event: str | None = None, event_reason: str | None = None,
    ) -> None:  # fmt: skip
        """A step failed: condition `type_` False, a Warning event (`event`,
        else the message; `event_reason`, else the reason), the status written."""
        conds = self._set(conds, type_, "False", reason, message)
        self.recorder.event(hpa, "Warning", event_reason or reason, event or message)
        self._write(hpa, st, conds)

    def reconcile(self, key: str, hpa: Object) -> None:
        now = self.clock.now()
        spec = podutil.spec(hpa)
        ns = podutil.namespace_of(hpa)
        st: dict[str, Any] = dict(podutil.status(hpa))
        conds = st.get("conditions")
        ref = spec.get("scaleTargetRef") or {}
        kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
        try:
            scale = self.client.get_scale(kind, name, ns)
        except errors.ApiError as err:
            message = f"the HPA controller was unable to get the target's current scale: {err}"
            self._failed(hpa, st, conds, "AbleToScale", "FailedGetScale", message, str(err))
            return
        conds = self._set(
            conds,
            "AbleToScale",
            "True",
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale",
        )
        current = int(podutil.spec(scale).get("replicas", 0))
        min_r = int(spec.get("minReplicas", 1) if spec.get("minReplicas") is not None else 1)
        max_r = int(spec.get("maxReplicas", max(min_r, 1)))
        st["currentReplicas"] = int(podutil.status(scale).get("replicas", current))
        metric_desired: int | None = None
        current_metrics: list[Object] = []
        if (current != 0 or min_r == 0) and min_r <= current <= max_r:
            metric_desired, current_metrics, error = self._compute(hpa, scale, current, now)
            if metric_desired is None:
                st["currentMetrics"] = current_metrics or None
                self._failed(hpa, st, conds, "ScalingActive", "FailedGetResourceMetric", error)
                return
            conds = self._set(
                conds,
                "ScalingActive",
                "True",
                "ValidMetricFound",
                "the HPA was able to successfully calculate a replica count",
            )
        behavior = hpa_calc.Behavior.from_spec(spec.get("behavior"))
        with self._lock:
            recs = self.recommendations.setdefault(key, hpa_calc.Recommendations())
            ups = list(self.scale_ups.get(key, []))
            downs = list(self.scale_downs.get(key, []))
        decision = hpa_calc.decide(
            current,
            min_r,
            max_r,
            metric_desired,
            recs,
            now,
            behavior,
            ups,
            downs,
            self.config.hpa_downscale_stabilization,
        )
        for c in decision.conditions:
            conds = self._set(conds, c.type, c.status, c.reason, c.message)
        if decision.rescale:
            try:
                self.client.update_scale(kind, name, ns, decision.desired)
            except errors.ApiError as err:
                message = f"the HPA controller was unable to update the target scale: {err}"
                self._failed(hpa, st, conds, "AbleToScale", "FailedUpdateScale", message, str(err),
                             "FailedRescale")  # fmt: skip
                raise
            conds = self._set(
                conds,
                "AbleToScale",
                "True",
                "SucceededRescale",
                f"the HPA controller was able to update the target scale to {decision.desired}",
            )
            self.recorder.event(hpa, "Normal", "SuccessfulRescale", f"New size: {decision.desired}")
            st["lastScaleTime"] = rfc3339.format_time(now)
            if behavior is not None:
                change = hpa_calc.ScaleEvent(abs(decision.desired - current), now)
                with self._lock:
                    target = self.scale_ups if decision.desired > current else self.scale_downs
                    events = target.setdefault(key, [])
                    events.append(change)
                    target[key] = hpa_calc.prune_events(events, now, behavior.longest_period())
        st["desiredReplicas"] = decision.desired if decision.rescale else current
        if current_metrics:
            st["currentMetrics"] = current_metrics
        self._write(hpa, st, conds)

    def _compute(
        self, hpa: Object, scale: Object, current: int, now: float
    ) -> tuple[int | None, list[Object], str]:
        ns = podutil.namespace_of(hpa)
        try:
            selector = parse_label_selector(str(podutil.status(scale).get("selector") or ""))
        except SelectorError as err:
            return None, [], f"invalid selector: {err}"
        if selector.empty():
            return None, [], "the target's selector is empty"
        pods = self.pods.store.list(ns, selector)
        best: int | None = None
        statuses: list[Object] = []
        invalid = 0
        error = ""
        metrics = podutil.spec(hpa).get("metrics") or [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80},
                },
            }
        ]
        for m in metrics:
            if m.get("type") in CUSTOM_TYPES:
                try:
                    replicas, status = self._custom(m, ns, str(selector), pods, current, now)
                except (hpa_calc.MetricError, errors.ApiError, ValueError) as err:
                    invalid += 1
                    error = f"failed to get {str(m.get('type')).lower()} metric value: {err}"
                    continue
                statuses.append(status)
                best = replicas if best is None else max(best, replicas)
                continue
            if m.get("type") != "Resource":
                invalid += 1
                error = f"metric type {m.get('type')!r} is not supported"
                continue
            res = m.get("resource") or {}
            resource = str(res.get("name", "cpu"))
            target = res.get("target") or {}
            samples = [
                PodSample(**{**_sample(p).__dict__, "request": pod_request(p, resource)})
                for p in pods
            ]
            util = (
                target.get("averageUtilization")
                if target.get("type", "Utilization") == "Utilization"
                else None
            )
            avg_value: float | None = None
            if util is None:
                raw = target.get("averageValue")
                if raw is None:
                    invalid += 1
                    error = f"metric {resource}: target needs averageUtilization or averageValue"
                    continue
                avg_value = float(parse_quantity(raw))
            try:
                result = hpa_calc.replicas_for_resource(
                    current,
                    samples,
                    self.metrics_source.pod_metrics(ns, resource),
                    resource,
                    now,
                    target_utilization=int(util) if util is not None else None,
                    target_average_value=avg_value,
                    tolerance=self.config.hpa_tolerance,
                )
            except hpa_calc.MetricError as err:
                invalid += 1
                error = f"failed to get {resource} utilization: {err}"
                continue
            current_value: Object = {"averageValue": _quantity(result.raw_average, resource)}
            if result.utilization is not None:
                current_value["averageUtilization"] = result.utilization
            statuses.append(
                {"type": "Resource", "resource": {"name": resource, "current": current_value}}
            )
            best = result.replicas if best is None else max(best, result.replicas)
        if best is None or (invalid and best < current):
            return None, statuses, error or "no metrics"
        return best, statuses, ""

    def _custom(
        self, m: Object, ns: str, selector: str, pods: list[Object], current: int, now: float
    ) -> tuple[int, Object]:
        """A Pods, Object or External metric, from the custom or external metrics API."""
        source = self.metrics_source
        if not hasattr(source, "external_metric"):
            raise hpa_calc.MetricError("no custom or external metrics API is available")
        custom: hpa_custom.CustomMetricsSource = source  # type: ignore[assignment]
        samples = [_sample(p) for p in pods]
        tolerance = self.config.hpa_tolerance
        kind = m.get("type")
        if kind == "Pods":
            return hpa_custom.pods_metric(custom, m.get("pods") or {}, ns, selector, samples,
                                          current, now, tolerance)  # fmt: skip
        if kind == "Object":
            return hpa_custom.object_metric(custom, m.get("object") or {}, ns, samples, current,
                                            tolerance)  # fmt: skip
        return hpa_custom.external_metric(custom, m.get("external") or {}, ns, samples, current,
                                          tolerance)  # fmt: skip

    def _write(self, hpa: Object, st: dict[str, Any], conds: list[Object] | None) -> None:
        st["conditions"] = conds
        st = {k: v for k, v in st.items() if v is not None}
        self.write_status("HorizontalPodAutoscaler", hpa, st)


def _quantity(value: float, resource: str) -> str:
    if resource == "cpu":
        return f"{round(value * 1000)}m"
    return str(round(value))


def init(ctx: ControllerContext) -> Controller:
    return HPAController(ctx)
