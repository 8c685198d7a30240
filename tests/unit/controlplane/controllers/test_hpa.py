"""The HPA controller driving a Deployment through its scale subresource."""

from __future__ import annotations

from typing import Any

from .conftest import deployment


def hpa(min_r=7, max_r=8, cpu=30, target="nginx", behavior=None):
    body: dict[str, Any] = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": target, "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": min_r,
            "maxReplicas": max_r,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": cpu},
                    },
                }
            ],
        },
    }
    if behavior is not None:
        body["spec"]["behavior"] = behavior
    return body


def nginx(replicas=3):
    d = deployment("nginx", replicas=replicas)
    d["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    return d


def replicas(e, name="nginx"):
    return e.client.get("Deployment", name)["spec"]["replicas"]


def report(e, usage_cores):
    for p in e.pods():
        e.metrics.set("default", p["metadata"]["name"], "cpu", usage_cores, timestamp=e.clock.now())


def cond(e, type_, name="nginx"):
    for c in e.client.get("HorizontalPodAutoscaler", name).get("status", {}).get("conditions", []):
        if c["type"] == type_:
            return c
    return None


def test_autoscale_min_max_and_usage(env):
    # skiffctl autoscale deployment nginx --cpu-percent=30 --min=7 --max=8
    e = env("deployment,replicaset,horizontalpodautoscaling")
    e.client.create("Deployment", nginx(3))
    e.wait(lambda: len(e.pods()) == 3)
    e.client.create("HorizontalPodAutoscaler", hpa())
    # below min: straight to 7
    e.wait(lambda: replicas(e) == 7)
    e.wait(lambda: len(e.pods()) == 7)
    e.make_ready()
    e.wait(e.idle)
    e.clock.step(61)  # past the first metric window after readiness
    # 90% of request against a 30% target: wants 21, capped at max 8
    report(e, 0.09)
    e.clock.step(15)
    e.settle(lambda: replicas(e) == 8, step=1.0)
    e.wait(lambda: (cond(e, "ScalingLimited") or {}).get("reason") == "TooManyReplicas")
    e.wait(lambda: len(e.pods()) == 8)
    e.make_ready()
    e.wait(e.idle)
    e.clock.step(61)
    # usage drops to 5%: wants 2, floor is 7, but the 5-minute window holds 8
    report(e, 0.005)
    e.clock.step(15)
    e.settle(
        lambda: (cond(e, "AbleToScale") or {}).get("reason") == "ScaleDownStabilized", step=1.0
    )
    assert replicas(e) == 8
    e.clock.step(300)
    e.settle(lambda: replicas(e) == 7, step=1.0)
    e.wait(
        lambda: e.client.get("HorizontalPodAutoscaler", "nginx")["status"]["desiredReplicas"] == 7
    )
    assert cond(e, "ScalingActive")["status"] == "True"


def test_scale_up_rate_limit(env):
    e = env("deployment,replicaset,horizontalpodautoscaling")
    e.client.create("Deployment", nginx(2))
    e.wait(lambda: len(e.pods()) == 2)
    e.make_ready()
    e.wait(
        lambda: all(
            e.cached("Pod", p["metadata"]["name"])["status"].get("phase") == "Running"
            for p in e.pods()
        )
    )
    e.clock.step(61)  # past the first metric window after readiness
    report(e, 1.0)  # 1000% of request
    e.client.create("HorizontalPodAutoscaler", hpa(min_r=1, max_r=50, cpu=50))
    e.wait(lambda: replicas(e) == 4)  # max(2 x 2, 4)
    assert cond(e, "ScalingLimited")["reason"] == "ScaleUpLimit"


def test_missing_target_and_metrics_are_reported(env):
    e = env("deployment,replicaset,horizontalpodautoscaling")
    e.client.create("HorizontalPodAutoscaler", hpa(target="ghost"))
    e.wait(lambda: (cond(e, "AbleToScale", "ghost") or {}).get("reason") == "FailedGetScale")
    e.client.create("Deployment", nginx(7))
    e.wait(lambda: len(e.pods()) == 7)
    e.client.create("HorizontalPodAutoscaler", hpa())
    # no metrics at all: ScalingActive False, replicas unchanged
    e.wait(lambda: (cond(e, "ScalingActive") or {}).get("reason") == "FailedGetResourceMetric")
    assert cond(e, "ScalingActive")["status"] == "False"
    assert replicas(e) == 7


def test_hpa_on_a_replicaset(env):
    e = env("replicaset,horizontalpodautoscaling")
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
                    ]
                },
            },
        },
    }
    e.client.create("ReplicaSet", rs)
    e.wait(lambda: len(e.pods()) == 1)
    e.make_ready()
    e.wait(
        lambda: all(
            (e.cached("Pod", p["metadata"]["name"]) or {}).get("status", {}).get("phase")
            == "Running"
            for p in e.pods()
        )
    )
    e.clock.step(61)
    report(e, 2.0)  # 200% of request against 50%
    body = hpa(min_r=1, max_r=10, cpu=50, target="web")
    body["spec"]["scaleTargetRef"] = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web"}
    e.client.create("HorizontalPodAutoscaler", body)
    e.wait(
        lambda: e.client.get("ReplicaSet", "web")["spec"]["replicas"] == 4
    )  # ceil(4), limit max(2, 4)
