"""skiffctl autoscale against the fake API client."""

from __future__ import annotations

import pytest

from tests.fakes.skiffctl import Ctl


def deploy(ctl: Ctl, kind: str = "Deployment", name: str = "nginx", ns: str = "default") -> None:
    ctl.client.create(
        kind,
        {"metadata": {"name": name}, "spec": {"replicas": 3, "selector": {}}},
        ns,
    )


CPU_30 = [
    {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 30}},
    }
]


def test_autoscale_deployment_as_the_issue_writes_it(ctl: Ctl) -> None:
    deploy(ctl)
    r = ctl("autoscale", "deployment", "nginx", "--cpu-percent=30", "--min=7", "--max=8")
    assert (r.code, r.out, r.err) == (
        0,
        "horizontalpodautoscaler.autoscaling/nginx autoscaled\n",
        "",
    )
    hpa = ctl.client.get("HorizontalPodAutoscaler", "nginx", "default")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"},
        "minReplicas": 7,
        "maxReplicas": 8,
        "metrics": CPU_30,
    }


def test_autoscale_forms_name_namespace_and_defaults(ctl: Ctl) -> None:
    deploy(ctl, "StatefulSet", "db", ns="prod")
    r = ctl("-n", "prod", "autoscale", "sts/db", "--max", "4", "--name", "db-hpa", "-o", "name")
    assert (r.code, r.out) == (0, "horizontalpodautoscaler.autoscaling/db-hpa\n"), r.err
    hpa = ctl.client.get("HorizontalPodAutoscaler", "db-hpa", "prod")
    # No --min: the server defaults it; no --cpu-percent: no metrics (the controller's default).
    assert hpa["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
        "maxReplicas": 4,
    }
    deploy(ctl, "ReplicaSet", "rs1")
    assert ctl("autoscale", "rs", "rs1", "--max=2", "--cpu-percent", "50").code == 0
    spec = ctl.client.get("HorizontalPodAutoscaler", "rs1", "default")["spec"]
    assert spec["scaleTargetRef"]["kind"] == "ReplicaSet"
    assert spec["metrics"][0]["resource"]["target"]["averageUtilization"] == 50


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["deployment/nginx", "--min=9", "--max=8"], "--max=MAXPODS must be larger or equal"),
        (["deployment/nginx", "--min=1"], "--max=MAXPODS is required"),
        (["deployment/nginx", "--max=0"], "--max=MAXPODS is required"),
        (["deployment/nginx", "--min=0", "--max=3"], "--min=MINPODS must be at least 1"),
        (["pod/nginx", "--max=3"], "cannot autoscale a Pod"),
        (["deployment", "--max=3"], "resource name may not be empty"),
    ],
)
def test_autoscale_bad_flags(ctl: Ctl, argv: list[str], message: str) -> None:
    deploy(ctl)
    r = ctl("autoscale", *argv)
    assert r.code == 1 and message in r.err, r.err
    assert not ctl.client.objects("HorizontalPodAutoscaler")


def test_autoscale_missing_target_and_existing_hpa(ctl: Ctl) -> None:
    r = ctl("autoscale", "deployment/nginx", "--max=3")
    assert r.code == 1
    assert r.err == 'Error from server (NotFound): deployments.apps "nginx" not found\n'
    assert not ctl.client.calls_of("create", "HorizontalPodAutoscaler")
    deploy(ctl)
    assert ctl("autoscale", "deployment/nginx", "--max=3").code == 0
    r = ctl("autoscale", "deployment/nginx", "--max=3")
    assert r.code == 1 and r.err.startswith("Error from server (AlreadyExists)")
