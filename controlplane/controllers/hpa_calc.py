"""The HorizontalPodAutoscaler's arithmetic, as Kubernetes computes it (pure).

Three steps, each a pure function of its inputs and an explicit `now`:

1. `replicas_for_resource()` — the replica calculator: the usage ratio over
   the *ready* pods that reported metrics; within the tolerance (10%) keep
   the current count; otherwise, when pods are missing metrics or unready,
   assume missing pods use 0 on a scale-up and on a scale-down max(100%,
   target) of their request (Utilization) or the target (AverageValue), unready pods use 0 on a scale-up, and recompute; a
   recomputation that flips direction or lands within tolerance keeps the
   current count (kube-controller-manager's `calcPlainMetricReplicas`).
2. `Recommendations` — the stabilization window: remember each
   recommendation with its time; on scale-down apply the highest
   recommendation of the window (default 300 s), and with a `behavior` also
   the lowest of the scale-up window.
3. `limit_replicas()` / `limit_replicas_with_behavior()` — the rate limits
   and min/max: without a behavior, scale-up is capped at max(2 x current,
   4); with a behavior, per-policy limits over `periodSeconds` from recorded
   scale events, selected by Max/Min/Disabled.

The resulting conditions (AbleToScale, ScalingActive, ScalingLimited) carry
the reasons Kubernetes uses. Nothing here performs I/O or reads a clock.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TOLERANCE = 0.1
CPU_INITIALIZATION_PERIOD = 300.0
DELAY_OF_INITIAL_READINESS = 30.0
DOWNSCALE_STABILIZATION_WINDOW = 300.0
SCALE_UP_LIMIT_FACTOR = 2.0
SCALE_UP_LIMIT_MINIMUM = 4.0
MAX_MISSED = 2**31 - 1


class MetricError(Exception):
    """No usable metrics (all pods unready or none reported)."""


@dataclass(frozen=True)
class PodSample:
    """What the calculator needs to know about one target pod."""

    name: str
    phase: str = "Running"  # Pending / Running / Succeeded / Failed / Unknown
    deleting: bool = False
    ready: bool | None = True  # None when the Ready condition is missing
    ready_transition: float | None = None  # Ready condition lastTransitionTime
    start_time: float | None = 0.0
    request: float = 0.0  # the summed container request of the resource


@dataclass(frozen=True)
class MetricSample:
    value: float
    timestamp: float = 0.0
    window: float = 60.0


@dataclass(frozen=True)
class ReplicaResult:
    replicas: int
    utilization: int | None  # percent, for Utilization targets
    raw_average: float  # average usage over the pods counted


def group_pods(
    pods: Sequence[PodSample],
    metrics: Mapping[str, MetricSample],
    resource: str,
    now: float,
    cpu_initialization_period: float = CPU_INITIALIZATION_PERIOD,
    delay_of_initial_readiness: float = DELAY_OF_INITIAL_READINESS,
) -> tuple[int, set[str], set[str], set[str]]:
    """(ready count, unready, missing, ignored) as Kubernetes' groupPods."""
    ready = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    for pod in pods:
        if pod.deleting or pod.phase == "Failed":
            ignored.add(pod.name)
            continue
        if pod.phase == "Pending":
            unready.add(pod.name)
            continue
        metric = metrics.get(pod.name)
        if metric is None:
            missing.add(pod.name)
            continue
        if resource == "cpu":
            if pod.start_time is None or pod.ready is None:
                is_unready = True
            elif pod.start_time + cpu_initialization_period > now:
                transition = pod.ready_transition or 0.0
                is_unready = (not pod.ready) or metric.timestamp < transition + metric.window
            else:
                transition = pod.ready_transition or 0.0
                is_unready = (not pod.ready) and pod.start_time + delay_of_initial_readiness > (
                    transition
                )
            if is_unready:
                unready.add(pod.name)
                continue
        ready += 1
    return ready, unready, missing, ignored


def _utilization_ratio(
    values: Mapping[str, float], requests: Mapping[str, float], target_utilization: int
) -> tuple[float, int, float]:
    usage = 0.0
    request = 0.0
    for name, value in values.items():
        if name in requests:
            usage += value
            request += requests[name]
    if request <= 0:
        raise MetricError("no metrics returned matched known pods")
    current = int(usage * 100 / request)
    return current / target_utilization, current, usage / max(1, len(values))


def _average_ratio(values: Mapping[str, float], target_average: float) -> tuple[float, float]:
    average = sum(values.values()) / len(values)
    return average / target_average, average


def replicas_for_resource(
    current_replicas: int,
    pods: Sequence[PodSample],
    metrics: Mapping[str, MetricSample],
    resource: str,
    now: float,
    target_utilization: int | None = None,
    target_average_value: float | None = None,
    tolerance: float = TOLERANCE,
    cpu_initialization_period: float = CPU_INITIALIZATION_PERIOD,
    delay_of_initial_readiness: float = DELAY_OF_INITIAL_READINESS,
) -> ReplicaResult:
    """The replica calculator for a Resource metric (Utilization or AverageValue)."""
    if not pods:
        raise MetricError("no pods returned by selector while calculating replica count")
    if (target_utilization is None) == (target_average_value is None):
        raise ValueError("exactly one of target_utilization, target_average_value")
    ready_count, unready, missing, ignored = group_pods(
        pods, metrics, resource, now, cpu_initialization_period, delay_of_initial_readiness
    )
    values = {n: m.value for n, m in metrics.items() if n not in ignored and n not in unready}
    values = {n: v for n, v in values.items() if any(p.name == n for p in pods)}
    if not values:
        raise MetricError("did not receive metrics for targeted pods (pods might be unready)")
    requests = {p.name: p.request for p in pods if p.request > 0}

    def ratio_of(vals: Mapping[str, float]) -> tuple[float, int | None, float]:
        if target_utilization is not None:
            if any(n not in requests for n in vals):
                raise MetricError(f"missing request for {resource}")
            r, util, avg = _utilization_ratio(vals, requests, target_utilization)
            return r, util, avg
        assert target_average_value is not None
        r, avg = _average_ratio(vals, target_average_value)
        return r, None, avg

    usage_ratio, utilization, raw = ratio_of(values)
    scale_up_with_unready = bool(unready) and usage_ratio > 1.0
    if not scale_up_with_unready and not missing:
        if abs(1.0 - usage_ratio) <= tolerance:
            return ReplicaResult(current_replicas, utilization, raw)
        return ReplicaResult(math.ceil(usage_ratio * ready_count), utilization, raw)

    adjusted = dict(values)
    for name in missing:
        if usage_ratio < 1.0:
            if target_utilization is not None:
                # GetResourceReplicas: max(100%, target) of its request, so
                # that a pod without metrics never argues for a scale-down.
                fallback = max(100, target_utilization)
                adjusted[name] = requests.get(name, 0.0) * fallback / 100.0
            else:
                assert target_average_value is not None
                adjusted[name] = target_average_value
        else:
            adjusted[name] = 0.0
    if scale_up_with_unready:
        for name in unready:
            adjusted[name] = 0.0
    new_ratio, _, _ = ratio_of(adjusted)
    if (
        abs(1.0 - new_ratio) <= tolerance
        or (usage_ratio < 1.0 and new_ratio > 1.0)
        or (usage_ratio > 1.0 and new_ratio < 1.0)
    ):
        return ReplicaResult(current_replicas, utilization, raw)
    new_replicas = math.ceil(new_ratio * len(adjusted))
    if (new_ratio < 1.0 and new_replicas > current_replicas) or (
        new_ratio > 1.0 and new_replicas < current_replicas
    ):
        return ReplicaResult(current_replicas, utilization, raw)
    return ReplicaResult(new_replicas, utilization, raw)


# ---- behavior ---------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    type: str  # "Pods" or "Percent"
    value: int
    period_seconds: int


@dataclass(frozen=True)
class Rules:
    stabilization_window_seconds: int
    select_policy: str = "Max"  # Max, Min, Disabled
    policies: tuple[Policy, ...] = ()


DEFAULT_SCALE_UP = Rules(0, "Max", (Policy("Percent", 100, 15), Policy("Pods", 4, 15)))
DEFAULT_SCALE_DOWN = Rules(300, "Max", (Policy("Percent", 100, 15),))


def _rules(raw: Mapping[str, Any] | None, default: Rules) -> Rules:
    if raw is None:
        return default
    window = raw.get("stabilizationWindowSeconds")
    policies = raw.get("policies")
    return Rules(
        default.stabilization_window_seconds if window is None else int(window),
        str(raw.get("selectPolicy") or "Max"),
        default.policies
        if policies is None
        else tuple(
            Policy(str(p.get("type")), int(p.get("value", 0)), int(p.get("periodSeconds", 15)))
            for p in policies
        ),
    )


@dataclass(frozen=True)
class Behavior:
    scale_up: Rules = DEFAULT_SCALE_UP
    scale_down: Rules = DEFAULT_SCALE_DOWN

    @classmethod
    def from_spec(cls, behavior: Mapping[str, Any] | None) -> Behavior | None:
        """None when the HPA has no behavior (the legacy rules then apply)."""
        if behavior is None:
            return None
        return cls(
            _rules(behavior.get("scaleUp"), DEFAULT_SCALE_UP),
            _rules(behavior.get("scaleDown"), DEFAULT_SCALE_DOWN),
        )

    def longest_period(self) -> int:
        periods = [p.period_seconds for p in (*self.scale_up.policies, *self.scale_down.policies)]
        return max(periods, default=0)


@dataclass(frozen=True)
class ScaleEvent:
    change: int  # positive, the size of one scale-up or scale-down
    timestamp: float


@dataclass(frozen=True)
class Condition:
    type: str
    status: str  # "True" / "False"
    reason: str
    message: str


@dataclass
class Recommendations:
    """Timestamped recommendations of one HPA (the controller keeps one per key)."""

    items: list[tuple[int, float]] = field(default_factory=list)

    def _record(self, desired: int, now: float, stale: int | None) -> None:
        """Keep `desired` at `now`, in place of the stale entry when there is one."""
        if stale is not None:
            self.items[stale] = (desired, now)
        else:
            self.items.append((desired, now))

    def stabilize(self, desired: int, now: float, window: float) -> int:
        """Legacy: the highest recommendation within the downscale window."""
        best = desired
        old_index: int | None = None
        cutoff = now - window
        for i, (rec, ts) in enumerate(self.items):
            if ts < cutoff:
                old_index = i
            elif rec > best:
                best = rec
        self._record(desired, now, old_index)
        return best

    def stabilize_with_behavior(
        self, desired: int, current: int, now: float, behavior: Behavior
    ) -> tuple[int, str, str]:
        up_cutoff = now - behavior.scale_up.stabilization_window_seconds
        down_cutoff = now - behavior.scale_down.stabilization_window_seconds
        up_rec = desired
        down_rec = desired
        old_index: int | None = None
        for i, (rec, ts) in enumerate(self.items):
            if ts > up_cutoff:
                up_rec = min(rec, up_rec)
            if ts > down_cutoff:
                down_rec = max(rec, down_rec)
            if ts < up_cutoff and ts < down_cutoff:
                old_index = i
        recommendation = current
        if recommendation < up_rec:
            recommendation = up_rec
        if recommendation > down_rec:
            recommendation = down_rec
        self._record(desired, now, old_index)
        if desired >= current:
            return (
                recommendation,
                "ScaleUpStabilized",
                "recent recommendations were lower than current one, applying the lowest recent recommendation",
            )
        return (
            recommendation,
            "ScaleDownStabilized",
            "recent recommendations were higher than current one, applying the highest recent recommendation",
        )


def scale_up_limit(current: int) -> int:
    return int(max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM))


def limit_replicas(
    current: int, desired: int, min_replicas: int, max_replicas: int
) -> tuple[int, str, str]:
    """Legacy rules (no behavior): (replicas, ScalingLimited reason, message)."""
    limit = scale_up_limit(current)
    if max_replicas > limit:
        maximum = limit
        reason = "ScaleUpLimit"
        message = "the desired replica count is increasing faster than the maximum scale rate"
    else:
        maximum = max_replicas
        reason = "TooManyReplicas"
        message = "the desired replica count is more than the maximum replica count"
    if desired < min_replicas:
        return (
            min_replicas,
            "TooFewReplicas",
            "the desired replica count is less than the minimum replica count",
        )
    if desired > maximum:
        return maximum, reason, message
    return desired, "DesiredWithinRange", "the desired count is within the acceptable range"


def _changes_in_period(period: int, events: Sequence[ScaleEvent], now: float) -> int:
    cutoff = now - period
    return sum(e.change for e in events if e.timestamp > cutoff)


def _limit_with_rules(
    current: int,
    ups: Sequence[ScaleEvent],
    downs: Sequence[ScaleEvent],
    rules: Rules,
    now: float,
    *,
    up: bool,
) -> int:
    """The replica count the policies of `rules` let the target reach from
    `current`, counting the changes of each policy's period. selectPolicy
    Max picks the policy allowing the largest change (the highest count
    going up, the lowest going down), Min the smallest."""
    if rules.select_policy == "Disabled":
        return current
    proposals: list[int] = []
    for p in rules.policies:
        start = (
            current
            - _changes_in_period(p.period_seconds, ups, now)
            + _changes_in_period(p.period_seconds, downs, now)
        )
        if up:
            proposals.append(
                start + p.value if p.type == "Pods" else math.ceil(start * (1 + p.value / 100))
            )
        else:
            proposals.append(
                start - p.value if p.type == "Pods" else int(start * (1 - p.value / 100))
            )
    if not proposals:
        return current
    largest_change = max if up else min
    smallest_change = min if up else max
    return (smallest_change if rules.select_policy == "Min" else largest_change)(proposals)


def scale_up_limit_with_rules(
    current: int, ups: Sequence[ScaleEvent], downs: Sequence[ScaleEvent], rules: Rules, now: float
) -> int:
    return _limit_with_rules(current, ups, downs, rules, now, up=True)


def scale_down_limit_with_rules(
    current: int, ups: Sequence[ScaleEvent], downs: Sequence[ScaleEvent], rules: Rules, now: float
) -> int:
    return _limit_with_rules(current, ups, downs, rules, now, up=False)


def limit_replicas_with_behavior(
    current: int,
    desired: int,
    min_replicas: int,
    max_replicas: int,
    behavior: Behavior,
    ups: Sequence[ScaleEvent],
    downs: Sequence[ScaleEvent],
    now: float,
) -> tuple[int, str, str]:
    reason = "DesiredWithinRange"
    message = "the desired count is within the acceptable range"
    if desired > current:
        limit = max(current, scale_up_limit_with_rules(current, ups, downs, behavior.scale_up, now))
        maximum = max_replicas
        if maximum > limit:
            maximum = limit
            reason = "ScaleUpLimit"
            message = "the desired replica count is increasing faster than the maximum scale rate"
        else:
            reason = "TooManyReplicas"
            message = "the desired replica count is more than the maximum replica count"
        if desired > maximum:
            return maximum, reason, message
    elif desired < current:
        limit = min(
            current, scale_down_limit_with_rules(current, ups, downs, behavior.scale_down, now)
        )
        minimum = min_replicas
        if minimum < limit:
            minimum = limit
            reason = "ScaleDownLimit"
            message = "the desired replica count is decreasing faster than the maximum scale rate"
        else:
            reason = "TooFewReplicas"
            message = "the desired replica count is less than the minimum replica count"
        if desired < minimum:
            return minimum, reason, message
    return desired, "DesiredWithinRange", "the desired count is within the acceptable range"


@dataclass(frozen=True)
class Decision:
    desired: int
    rescale: bool
    conditions: tuple[Condition, ...]


def normalize(
    current: int,
    metric_desired: int,
    min_replicas: int,
    max_replicas: int,
    recommendations: Recommendations,
    now: float,
    behavior: Behavior | None = None,
    ups: Sequence[ScaleEvent] = (),
    downs: Sequence[ScaleEvent] = (),
    downscale_window: float = DOWNSCALE_STABILIZATION_WINDOW,
) -> Decision:
    """Stabilize, then limit (min/max and rate); conditions AbleToScale and ScalingLimited."""
    conds: list[Condition] = []
    if behavior is None:
        stabilized = recommendations.stabilize(metric_desired, now, downscale_window)
        reason = "ScaleDownStabilized"
        message = "recent recommendations were higher than current one, applying the highest recent recommendation"
    else:
        stabilized, reason, message = recommendations.stabilize_with_behavior(
            metric_desired, current, now, behavior
        )
    if stabilized != metric_desired:
        conds.append(Condition("AbleToScale", "True", reason, message))
    else:
        conds.append(
            Condition(
                "AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size"
            )
        )
    if behavior is None:
        desired, reason, message = limit_replicas(current, stabilized, min_replicas, max_replicas)
    else:
        desired, reason, message = limit_replicas_with_behavior(
            current, stabilized, min_replicas, max_replicas, behavior, ups, downs, now
        )
    limited = "False" if desired == stabilized else "True"
    conds.append(Condition("ScalingLimited", limited, reason, message))
    return Decision(desired, desired != current, tuple(conds))


def decide(
    current: int,
    min_replicas: int,
    max_replicas: int,
    metric_desired: int | None,
    recommendations: Recommendations,
    now: float,
    behavior: Behavior | None = None,
    ups: Sequence[ScaleEvent] = (),
    downs: Sequence[ScaleEvent] = (),
    downscale_window: float = DOWNSCALE_STABILIZATION_WINDOW,
) -> Decision:
    """reconcileAutoscaler's choice, given the metrics' proposal (None: not computed)."""
    if current == 0 and min_replicas != 0:
        return Decision(
            0,
            False,
            (
                Condition(
                    "ScalingActive",
                    "False",
                    "ScalingDisabled",
                    "scaling is disabled since the replica count of the target is zero",
                ),
            ),
        )
    if current > max_replicas:
        return Decision(max_replicas, True, ())
    if current < min_replicas:
        return Decision(min_replicas, True, ())
    if metric_desired is None:
        return Decision(current, False, ())
    return normalize(
        current,
        metric_desired,
        min_replicas,
        max_replicas,
        recommendations,
        now,
        behavior,
        ups,
        downs,
        downscale_window,
    )


def prune_events(events: list[ScaleEvent], now: float, longest_period: int) -> list[ScaleEvent]:
    """Drop scale events older than the longest policy period."""
    return [e for e in events if e.timestamp > now - longest_period]
