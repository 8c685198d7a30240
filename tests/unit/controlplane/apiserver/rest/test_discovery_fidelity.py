"""Discovery as Kubernetes writes it: each stored resource's storageVersionHash
(the values kube-apiserver publishes for the same kinds), none for reviews."""

from __future__ import annotations

from controlplane.apiserver.rest import discovery


def test_storage_version_hashes_are_kubernetes_values() -> None:
    core = {r["name"]: r for r in (discovery.resource_list("v1") or {})["resources"]}
    assert core["pods"]["storageVersionHash"] == "xPOwRZ+Yhw8="
    assert core["configmaps"]["storageVersionHash"] == "qFsyl6wFWjQ="
    assert "storageVersionHash" not in core["pods/status"]
    apps = {r["name"]: r for r in (discovery.resource_list("apps/v1") or {})["resources"]}
    assert apps["deployments"]["storageVersionHash"] == "8aSe+NMegvE="
    authz = discovery.resource_list("authorization.k8s.io/v1") or {}
    reviews = {r["name"]: r for r in authz["resources"]}
    assert "selfsubjectrulesreviews" in reviews and "localsubjectaccessreviews" in reviews
    assert "storageVersionHash" not in reviews["selfsubjectaccessreviews"]
