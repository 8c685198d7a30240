"""The metrics API on `skiff up` (issue 30): `kubectl top nodes`, `kubectl
top pods` (kubectl 1.33) and an HPA scaling a CPU-bound Deployment (a
busybox loop) from metrics.k8s.io, which the API server computes from the
agent's stats as metrics-server would. Before, `kubectl top` answered
"Metrics API not available" and the HPA read nodes/stats directly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.agent.kubelet_up import BUSYBOX, Cluster, busybox_pod, container, skiff_up
from tests.harness.images import TestImages
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]

BURN = "while true; do :; done"
CPU = {"requests": {"cpu": "100m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}}


@pytest.fixture(scope="module")
def cluster(images: TestImages) -> Iterator[Cluster]:
    with skiff_up(images) as c:
        yield c


def _millicores(text: str) -> int:
    return int(text.removesuffix("m")) if text.endswith("m") else int(float(text) * 1000)


def test_kubectl_top_nodes_and_pods(cluster: Cluster) -> None:
    cluster.api.create("Pod", busybox_pod("hot", container("burn", BURN, resources=CPU)),
                       "default")  # fmt: skip
    cluster.wait_phase("hot", "Running")
    try:

        def top_nodes() -> str:
            res = cluster.kubectl("top", "nodes", check=False)
            return res.stdout if res.returncode == 0 else ""

        out = wait_for(top_nodes, timeout=90, interval=1, message="kubectl top nodes answering")
        lines = out.splitlines()
        assert lines[0].split()[:3] == ["NAME", "CPU(cores)", "CPU(%)"], lines
        assert len(lines) == 2 and _millicores(lines[1].split()[1]) > 0, lines

        def hot_row() -> list[str]:
            res = cluster.kubectl("top", "pods", "hot", check=False)
            if res.returncode != 0:
                return []
            row = res.stdout.splitlines()[1].split()
            return row if _millicores(row[1]) >= 100 else []

        row = wait_for(hot_row, timeout=90, interval=1, message="the busy pod's CPU in top")
        assert row[0] == "hot" and _millicores(row[1]) <= 260, row  # limited to 200m
        assert row[2].endswith("Mi") or row[2].endswith("Ki"), row
        containers = cluster.kubectl("top", "pods", "hot", "--containers").stdout
        assert "burn" in containers
        doc = json.loads(cluster.kubectl("get", "--raw",
                                         "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/hot").stdout)  # fmt: skip
        assert doc["kind"] == "PodMetrics" and doc["window"].endswith("s")
        assert [c["name"] for c in doc["containers"]] == ["burn"]
    finally:
        cluster.api.delete("Pod", "hot", "default")


def test_hpa_scales_a_cpu_bound_deployment_from_the_metrics_api(cluster: Cluster) -> None:
    pod = busybox_pod("x", container("burn", BURN, resources=CPU))
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "burn", "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "burn"}},
                 "template": {"metadata": {"labels": {"app": "burn"}}, "spec": pod["spec"]}},
    }  # fmt: skip
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == BUSYBOX
    hpa = {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "burn", "namespace": "default"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "burn"},
                 "minReplicas": 1, "maxReplicas": 3,
                 "metrics": [{"type": "Resource", "resource": {
                     "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]},
    }  # fmt: skip
    doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": [deployment, hpa]})
    cluster.kubectl("apply", "-f", "-", input=doc)
    last: dict[str, Any] = {}
    try:

        def scaled() -> bool:
            st = cluster.api.get("HorizontalPodAutoscaler", "burn", "default").get("status") or {}
            last["status"] = st
            return (st.get("desiredReplicas") or 0) > 1

        wait_for(scaled, timeout=150, interval=1, message=f"the HPA scaling up (last {last})")
        st = last["status"]
        current = st["currentMetrics"][0]["resource"]["current"]
        assert current["averageUtilization"] > 50, st
        conds = {c["type"]: c for c in st.get("conditions") or []}
        assert conds["ScalingActive"]["status"] == "True", conds
        wait_for(
            lambda: (cluster.api.get("Deployment", "burn", "default").get("spec") or {}).get(
                "replicas", 0) > 1,
            timeout=30, interval=0.5, message="the Deployment scaled",
        )  # fmt: skip
        described = cluster.kubectl("get", "hpa", "burn").stdout
        assert "cpu:" in described and "/50%" in described, described
    finally:
        cluster.kubectl("delete", "-f", "-", "--ignore-not-found", "--wait=false", input=doc,
                        check=False)  # fmt: skip
