"""Table tests for the HPA arithmetic (replica calculator, stabilization, limits)."""

from __future__ import annotations

import pytest

from controlplane.controllers import hpa_calc as h
from controlplane.controllers.hpa_calc import MetricSample, PodSample

NOW = 10_000.0


def pods(n: int, request: float = 1.0, **kw) -> list[PodSample]:
    # started long ago, ready long ago: past the CPU initialization period
    return [
        PodSample(f"p{i}", request=request, start_time=0.0, ready_transition=0.0, **kw)
        for i in range(n)
    ]


def metrics(values: dict[str, float]) -> dict[str, MetricSample]:
    return {k: MetricSample(v, timestamp=NOW) for k, v in values.items()}


@pytest.mark.parametrize(
    ("usage", "current", "target", "want"),
    [
        # 3 pods at 90% of request, target 30% -> ratio 3 -> 9
        ([0.9, 0.9, 0.9], 3, 30, 9),
        # within 10% tolerance: keep
        ([0.32, 0.32, 0.32], 3, 30, 3),
        ([0.28, 0.28, 0.28], 3, 30, 3),
        # just outside tolerance: ceil(ratio * ready)
        ([0.34, 0.34, 0.34], 3, 30, 4),
        # scale down: 10% usage, target 50% -> ratio 0.2 -> ceil(0.6) = 1
        ([0.1, 0.1, 0.1], 3, 50, 1),
        # uneven usage averages over requests
        ([0.0, 0.0, 1.5], 3, 50, 3),
    ],
)
def test_utilization_ready_pods(usage, current, target, want):
    ps = pods(len(usage))
    ms = metrics({f"p{i}": u for i, u in enumerate(usage)})
    got = h.replicas_for_resource(current, ps, ms, "cpu", NOW, target_utilization=target)
    assert got.replicas == want


def test_missing_metrics_scale_up_assumes_zero():
    # 4 pods, 1 missing; 3 report 100% of request, target 50% -> ratio 2.
    # missing counted as 0 -> new ratio 1.5 -> ceil(1.5 * 4) = 6
    ps = pods(4)
    ms = metrics({"p0": 1.0, "p1": 1.0, "p2": 1.0})
    got = h.replicas_for_resource(4, ps, ms, "cpu", NOW, target_utilization=50)
    assert got.replicas == 6


@pytest.mark.parametrize(
    ("n", "usage", "target", "want"),
    [
        # The issue's case, as Kubernetes' GetResourceReplicas computes it:
        # 10 pods, target 50%, 9 at 10%, 1 missing counted at max(100%, 50%):
        # (9 * 0.1 + 1.0) / 10 = 19% -> ratio 0.38 -> ceil(3.8) = 4 (not 3).
        (10, 0.1, 50, 4),
        # 4 pods, 3 at 10%, target 50%: (0.3 + 1.0) / 4 = 32.5% -> 0.65 -> 3.
        (4, 0.1, 50, 3),
        # A target above 100% is the fallback itself: (0.3 + 1.5) / 4 = 45%
        # -> ratio 0.3 -> ceil(1.2) = 2.
        (4, 0.1, 150, 2),
    ],
)
def test_missing_metrics_scale_down_assume_max_of_100_and_target(n, usage, target, want):
    ps = pods(n)
    ms = metrics({f"p{i}": usage for i in range(n - 1)})
    got = h.replicas_for_resource(n, ps, ms, "cpu", NOW, target_utilization=target)
    assert got.replicas == want


def test_missing_metric_flipping_direction_keeps_current():
    # ready: 60% vs target 50% (ratio 1.2); one missing pod as 0 -> 40% (ratio 0.8): flip -> keep
    ps = pods(2)
    ms = metrics({"p0": 0.6})
    got = h.replicas_for_resource(2, ps, ms, "cpu", NOW, target_utilization=50)
    assert got.replicas == 2


def test_unready_pods_zero_on_scale_up():
    # 2 ready at 100%, 2 pending; target 50%: ratio 2 over ready; unready as 0 -> ratio 1 -> keep
    ps = [
        *pods(2),
        PodSample("p2", phase="Pending", request=1.0),
        PodSample("p3", phase="Pending", request=1.0),
    ]
    ms = metrics({"p0": 1.0, "p1": 1.0})
    got = h.replicas_for_resource(4, ps, ms, "cpu", NOW, target_utilization=50)
    assert got.replicas == 4
    # 2 ready at 150%: ratio 3; with unready as 0 -> 1.5 -> ceil(1.5*4) = 6
    ms = metrics({"p0": 1.5, "p1": 1.5})
    assert h.replicas_for_resource(4, ps, ms, "cpu", NOW, target_utilization=50).replicas == 6


def test_unready_pods_ignored_on_scale_down():
    ps = [*pods(2), PodSample("p2", phase="Pending", request=1.0)]
    ms = metrics({"p0": 0.1, "p1": 0.1})
    # ratio 0.2 over ready pods only: ceil(0.2 * 2) = 1
    assert h.replicas_for_resource(3, ps, ms, "cpu", NOW, target_utilization=50).replicas == 1


def test_deleting_and_failed_pods_ignored():
    ps = [
        *pods(2),
        PodSample("p2", deleting=True, request=1.0, start_time=0.0, ready_transition=0.0),
        PodSample("p3", phase="Failed", request=1.0),
    ]
    ms = metrics({"p0": 1.0, "p1": 1.0, "p2": 5.0, "p3": 5.0})
    assert h.replicas_for_resource(2, ps, ms, "cpu", NOW, target_utilization=50).replicas == 4


def test_cpu_initialization_period_marks_unready():
    # started 60 s ago, became ready 10 s ago: metric older than transition + window -> unready
    fresh = PodSample("p1", request=1.0, start_time=NOW - 60, ready_transition=NOW - 10)
    ps = [*pods(1), fresh]
    ms = {"p0": MetricSample(1.0, NOW), "p1": MetricSample(1.0, NOW - 5, window=60)}
    ready, unready, missing, ignored = h.group_pods(ps, ms, "cpu", NOW)
    assert (ready, unready, missing, ignored) == (1, {"p1"}, set(), set())
    # memory ignores readiness
    assert h.group_pods(ps, ms, "memory", NOW)[0] == 2


def test_average_value_target():
    ps = pods(2, request=0.0)
    ms = metrics({"p0": 200.0, "p1": 200.0})
    got = h.replicas_for_resource(2, ps, ms, "memory", NOW, target_average_value=100.0)
    assert got.replicas == 4


def test_no_metrics_is_an_error():
    with pytest.raises(h.MetricError):
        h.replicas_for_resource(2, pods(2), {}, "cpu", NOW, target_utilization=50)
    with pytest.raises(h.MetricError):
        h.replicas_for_resource(2, [], {}, "cpu", NOW, target_utilization=50)


@pytest.mark.parametrize(
    ("current", "desired", "lo", "hi", "want", "reason"),
    [
        (3, 9, 1, 10, 6, "ScaleUpLimit"),  # max(2*3, 4) = 6
        (1, 9, 1, 10, 4, "ScaleUpLimit"),  # max(2, 4) = 4
        (5, 20, 1, 8, 8, "TooManyReplicas"),
        (5, 0, 2, 8, 2, "TooFewReplicas"),
        (5, 6, 1, 8, 6, "DesiredWithinRange"),
    ],
)
def test_legacy_limits(current, desired, lo, hi, want, reason):
    assert h.limit_replicas(current, desired, lo, hi)[:2] == (want, reason)


def test_downscale_stabilization_window():
    recs = h.Recommendations()
    t = 0.0
    d = h.normalize(10, 10, 1, 20, recs, t)
    assert d.desired == 10 and not d.rescale
    # usage drops: recommendation 2, but the window holds 10 for 5 minutes
    for step in (60, 120, 299):
        d = h.normalize(10, 2, 1, 20, recs, t + step)
        assert d.desired == 10, step
        assert d.conditions[0].reason == "ScaleDownStabilized"
    d = h.normalize(10, 2, 1, 20, recs, t + 301)
    assert d.desired == 2 and d.rescale
    assert d.conditions[0].reason == "ReadyForNewScale"


def test_decide_disabled_and_bounds():
    recs = h.Recommendations()
    d = h.decide(0, 1, 5, 3, recs, 0.0)
    assert not d.rescale and d.conditions[0].reason == "ScalingDisabled"
    assert h.decide(9, 1, 5, 3, recs, 0.0).desired == 5
    assert h.decide(0, 0, 5, None, recs, 0.0).desired == 0
    assert h.decide(1, 3, 5, None, recs, 0.0).desired == 3


def test_behavior_defaults_and_policies():
    b = h.Behavior.from_spec({})
    assert b is not None
    assert b.scale_down.stabilization_window_seconds == 300
    # default scale-up: max(+100%, +4) per 15 s
    assert h.scale_up_limit_with_rules(3, [], [], b.scale_up, 0.0) == 7
    assert h.scale_up_limit_with_rules(10, [], [], b.scale_up, 0.0) == 20
    # events inside the period count against the limit
    ups = [h.ScaleEvent(3, 100.0)]
    assert h.scale_up_limit_with_rules(6, ups, [], b.scale_up, 110.0) == 7
    assert h.scale_up_limit_with_rules(6, ups, [], b.scale_up, 116.0) == 12
    slow = h.Behavior.from_spec(
        {
            "scaleDown": {
                "stabilizationWindowSeconds": 0,
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
            }
        }
    )
    assert slow is not None
    got = h.limit_replicas_with_behavior(10, 2, 1, 20, slow, [], [], 0.0)
    assert got[:2] == (9, "ScaleDownLimit")
    disabled = h.Behavior.from_spec({"scaleUp": {"selectPolicy": "Disabled"}})
    assert disabled is not None
    assert h.limit_replicas_with_behavior(3, 9, 1, 20, disabled, [], [], 0.0)[0] == 3
    # Min select picks the smaller change
    minsel = h.Behavior.from_spec({"scaleUp": {"selectPolicy": "Min"}})
    assert minsel is not None
    assert h.scale_up_limit_with_rules(10, [], [], minsel.scale_up, 0.0) == 14


def test_behavior_stabilization_scale_up_window():
    b = h.Behavior.from_spec({"scaleUp": {"stabilizationWindowSeconds": 60}})
    assert b is not None
    recs = h.Recommendations()
    d = h.normalize(3, 3, 1, 20, recs, 0.0, b)
    d = h.normalize(3, 8, 1, 20, recs, 10.0, b)
    assert d.desired == 3  # the lowest recommendation in the last 60 s is 3
    d = h.normalize(3, 8, 1, 20, recs, 70.0, b)
    assert d.desired == 7  # window passed; rate limit 3 -> max(6, 7)
