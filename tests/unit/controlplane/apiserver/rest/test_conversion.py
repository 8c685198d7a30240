"""Conversions between the stored and the second served group/version."""

from __future__ import annotations

from typing import Any

from controlplane.api.kinds import by_kind
from controlplane.apiserver.rest.conversion import find
from controlplane.apiserver.rest.paths import served_versions

V2_HPA: dict[str, Any] = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "h", "namespace": "default"},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
        "minReplicas": 1,
        "maxReplicas": 5,
        "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": 60}}},
            {"type": "Resource", "resource": {"name": "memory", "target": {
                "type": "AverageValue", "averageValue": "100Mi"}}},
        ],
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 30}},
    },
    "status": {"currentReplicas": 2, "desiredReplicas": 3, "currentMetrics": [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40}}}]},
}  # fmt: skip


def test_hpa_v1_view_and_round_trip() -> None:
    conv = find("HorizontalPodAutoscaler", "autoscaling/v1")
    assert conv is not None
    v1 = conv.from_stored(V2_HPA)
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 60
    assert "metrics" not in v1["spec"]
    assert v1["status"]["currentCPUUtilizationPercentage"] == 40
    assert conv.to_stored(v1) == V2_HPA  # the v2-only parts survive a v1 update


def test_event_renames_both_ways() -> None:
    conv = find("Event", "events.k8s.io/v1")
    assert conv is not None
    core = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "message": "m",
            "involvedObject": {"kind": "Pod", "name": "p"}, "count": 2}  # fmt: skip
    new = conv.from_stored(core)
    assert (new["note"], new["regarding"]["name"], new["deprecatedCount"]) == ("m", "p", 2)
    assert conv.to_stored(new) == core


def test_served_at_both_versions() -> None:
    assert served_versions(by_kind("HorizontalPodAutoscaler")) == (
        "autoscaling/v2", "autoscaling/v1",
    )  # fmt: skip
    assert served_versions(by_kind("Event")) == ("v1", "events.k8s.io/v1")
    assert find("Pod", "v1") is None
