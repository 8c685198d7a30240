"""The clusterrole-aggregation controller, on Kubernetes' documented example
(a `monitoring` ClusterRole aggregating every role labelled
rbac.example.com/aggregate-to-monitoring: "true")."""

from __future__ import annotations

from typing import Any

LABEL = "rbac.example.com/aggregate-to-monitoring"


def cluster_role(name: str, rules: list[dict[str, Any]], labels: dict[str, str] | None = None,
                 aggregate: bool = False) -> dict[str, Any]:  # fmt: skip
    role: dict[str, Any] = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                            "metadata": {"name": name, "labels": labels or {}}, "rules": rules}  # fmt: skip
    if aggregate:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {LABEL: "true"}}]}
    return role


def test_aggregated_role_follows_the_roles_it_selects(env):
    e = env("clusterrole-aggregation")
    endpoints = {"apiGroups": [""], "resources": ["services", "endpointslices", "pods"],
                 "verbs": ["get", "list", "watch"]}  # fmt: skip
    e.client.create("ClusterRole", cluster_role("monitoring", [], aggregate=True))
    e.client.create("ClusterRole", cluster_role("monitoring-endpoints", [endpoints],
                                                {LABEL: "true"}))  # fmt: skip
    e.client.create("ClusterRole", cluster_role("unrelated", [{"apiGroups": [""],
                    "resources": ["secrets"], "verbs": ["get"]}]))  # fmt: skip

    def rules():
        return e.client.get("ClusterRole", "monitoring").get("rules") or []

    e.wait(lambda: rules() == [endpoints])
    nodes = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}
    e.client.create("ClusterRole", cluster_role("monitoring-nodes", [nodes], {LABEL: "true"}))
    e.wait(lambda: rules() == [endpoints, nodes])
    e.client.delete("ClusterRole", "monitoring-endpoints")
    e.wait(lambda: rules() == [nodes])
    assert e.client.get("ClusterRole", "unrelated")["rules"][0]["resources"] == ["secrets"]
