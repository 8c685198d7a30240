"""ServiceAccounts (issue 16): pods run as an account, get a bound, expiring,
audience-scoped token through TokenRequest, and that token authenticates as
system:serviceaccount:NS:NAME, with RBAC, until its pod or account goes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.api.serviceaccounts import MOUNT_PATH
from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.errors import Forbidden, Invalid, NotFound, Unauthenticated
from controlplane.client.interface import DeleteOptions
from tests.unit.controlplane.apiserver.conftest import Cluster
from tests.unit.controlplane.apiserver.test_auth_mirror import mirror
from tests.unit.controlplane.apiserver.test_objects import pod

RBAC = "rbac.authorization.k8s.io"


@pytest.fixture
def admin(cluster: Cluster) -> Iterator[GrpcApiClient]:
    with cluster.client() as c:
        c.create("ServiceAccount", {"metadata": {"name": "builder"}}, "default")
        yield c


def token_request(audiences: list[str] | None = None, bound: dict[str, Any] | None = None,
                  seconds: int = 3600) -> dict[str, Any]:  # fmt: skip
    spec: dict[str, Any] = {"expirationSeconds": seconds}
    if audiences:
        spec["audiences"] = audiences
    if bound:
        spec["boundObjectRef"] = bound
    return {"metadata": {"name": "builder"}, "spec": spec}


def test_pods_get_the_token_volume_unless_they_opt_out(admin: GrpcApiClient) -> None:
    made = admin.create("Pod", pod("p"), "default")
    spec = made["spec"]
    assert spec["serviceAccountName"] == "default"
    (volume,) = [v for v in spec["volumes"] if v["name"].startswith("kube-api-access")]
    kinds = [next(iter(s)) for s in volume["projected"]["sources"]]
    assert kinds == ["serviceAccountToken", "configMap", "downwardAPI"]
    assert spec["containers"][0]["volumeMounts"] == [
        {"name": volume["name"], "mountPath": MOUNT_PATH, "readOnly": True}]  # fmt: skip
    off = admin.create("Pod", pod("q", automountServiceAccountToken=False), "default")
    assert "volumes" not in off["spec"]
    static = admin.create("Pod", mirror("m", "n1"), "default")
    assert "volumes" not in static["spec"] and "serviceAccountName" not in static["spec"]


def test_a_bound_token_authenticates_until_its_pod_goes(
    cluster: Cluster, admin: GrpcApiClient
) -> None:
    p = admin.create("Pod", pod("job", serviceAccountName="builder"), "default")
    bound = {"kind": "Pod", "name": "job", "uid": p["metadata"]["uid"]}
    tr = admin.create("TokenRequest", token_request(bound=bound), "default")
    token = tr["status"]["token"]
    assert tr["status"]["expirationTimestamp"].endswith("Z")
    with cluster.client(token) as sa:
        assert sa.whoami()["user"] == "system:serviceaccount:default:builder"
        with pytest.raises(Forbidden, match='"system:serviceaccount:default:builder" cannot'):
            sa.list("Pod", "default")
        admin.create("RoleBinding", {
            "metadata": {"name": "builder-view"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "builder"}]}, "default")  # fmt: skip
        assert sa.list("Pod", "default").items
    review = admin.create("TokenReview", {"spec": {"token": token}})
    assert "system:serviceaccounts:default" in review["status"]["user"]["groups"]
    # A second token for the same pod, never used before the pod is deleted:
    # refused afterwards (deleting the pod revokes its tokens).
    later = admin.create("TokenRequest", token_request(bound=bound), "default")["status"]["token"]
    admin.delete("Pod", "job", "default", options=DeleteOptions(grace_period_seconds=0))
    with cluster.client(later) as gone, pytest.raises(Unauthenticated):
        gone.whoami()


def test_tokens_are_audience_scoped_and_bounded(cluster: Cluster, admin: GrpcApiClient) -> None:
    other = admin.create("TokenRequest", token_request(["vault"]), "default")["status"]["token"]
    with cluster.client(other) as c, pytest.raises(Unauthenticated):
        c.whoami()  # meant for vault, not for the API server
    # ...but vault (or an agent, for its own audience) can have it reviewed.
    assert cluster.server.authority is not None
    with cluster.client(cluster.server.authority.node_token("n1")) as node:
        review = node.create("TokenReview", {"spec": {"token": other, "audiences": ["vault"]}})
        assert review["status"]["authenticated"] is True
        assert review["status"]["audiences"] == ["vault"]
        plain = node.create("TokenReview", {"spec": {"token": other}})
        assert plain["status"]["authenticated"] is False
        admin_token = cluster.server.authority.admin_token()
        scoped = node.create(
            "TokenReview", {"spec": {"token": admin_token, "audiences": ["vault"]}}
        )
        assert scoped["status"]["authenticated"] is False  # not an audience-bound token
    with pytest.raises(Invalid, match="expirationSeconds"):
        admin.create("TokenRequest", token_request(seconds=60), "default")
    with pytest.raises(NotFound):
        admin.create("TokenRequest", {"metadata": {"name": "nobody"}}, "default")
    forged = admin.create("TokenRequest", token_request(), "default")["status"]["token"]
    head, body, sig = forged.split(".")
    with cluster.client(f"{head}.{body}.{sig[:-4]}AAAA") as c, pytest.raises(Unauthenticated):
        c.whoami()


def test_a_node_requests_tokens_only_for_its_own_pods(
    cluster: Cluster, admin: GrpcApiClient
) -> None:
    assert cluster.server.authority is not None
    mine = admin.create("Pod", pod("mine", node="n1", serviceAccountName="builder"), "default")
    theirs = admin.create("Pod", pod("theirs", node="n2", serviceAccountName="builder"), "default")
    with cluster.client(cluster.server.authority.node_token("n1")) as n1:
        ok = n1.create("TokenRequest", token_request(bound={
            "kind": "Pod", "name": "mine", "uid": mine["metadata"]["uid"]}), "default")  # fmt: skip
        assert ok["status"]["token"]
        with pytest.raises(Forbidden, match="only for the accounts of its own pods"):
            n1.create("TokenRequest", token_request(bound={
                "kind": "Pod", "name": "theirs", "uid": theirs["metadata"]["uid"]}), "default")  # fmt: skip
        with pytest.raises(Forbidden):
            n1.create("TokenRequest", token_request(), "default")  # unbound
