"""RBAC (issue 16), against the examples of Kubernetes' RBAC documentation.

On the old code every identity but the admin and nodes was refused and
there were no users, roles or bindings at all; these show users getting
exactly what their bindings grant, aggregation, escalation refused, and
the access reviews `kubectl auth can-i` relies on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.api.rbac import Attributes, PolicyRule, allows, covers, parse_rules
from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.errors import Forbidden, Invalid, NotFound
from controlplane.client.interface import ListOptions
from tests.fakes.api_objects import pod
from tests.harness.apiserver import Cluster
from tests.harness.wait import wait_for

RBAC = "rbac.authorization.k8s.io"


@pytest.fixture
def admin(cluster: Cluster) -> Iterator[GrpcApiClient]:
    with cluster.client() as c:
        for ns in ("a", "b", "development"):
            c.create("Namespace", {"metadata": {"name": ns}})
        yield c


def user(cluster: Cluster, name: str, *groups: str) -> GrpcApiClient:
    assert cluster.server.authority is not None
    return cluster.client(cluster.server.authority.user_token(name, groups))


def role(name: str, rules: list[dict[str, Any]], kind: str = "Role") -> dict[str, Any]:
    return {"apiVersion": f"{RBAC}/v1", "kind": kind, "metadata": {"name": name}, "rules": rules}


def binding(name: str, role_kind: str, role_name: str, subject_kind: str, subject: str,
            kind: str = "RoleBinding", namespace: str = "") -> dict[str, Any]:  # fmt: skip
    subj: dict[str, Any] = {"kind": subject_kind, "name": subject}
    if subject_kind != "ServiceAccount":
        subj["apiGroup"] = RBAC
    if namespace:
        subj["namespace"] = namespace
    return {"apiVersion": f"{RBAC}/v1", "kind": kind, "metadata": {"name": name},
            "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role_name},
            "subjects": [subj]}  # fmt: skip


def read_pods() -> list[dict[str, Any]]:
    return [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "watch", "list"]}]


def test_rule_matching_subresources_names_and_urls() -> None:
    rules = parse_rules([
        {"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["my-configmap"],
         "verbs": ["update", "get"]},
        {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["update"]},
        {"nonResourceURLs": ["/healthz", "/healthz/*"], "verbs": ["get"]},
    ])  # fmt: skip
    assert allows(rules, Attributes("get", "", "pods", "log", "a", "p"))
    assert not allows(rules, Attributes("get", "", "pods", "exec", "a", "p"))
    assert allows(rules, Attributes("get", "", "configmaps", "", "a", "my-configmap"))
    assert not allows(rules, Attributes("get", "", "configmaps", "", "a", "other"))
    assert not allows(rules, Attributes("list", "", "configmaps", "", "a"))
    assert allows(rules, Attributes("update", "apps", "deployments", "scale", "a", "d"))
    assert allows(rules, Attributes("get", path="/healthz/etcd"))
    assert not allows(rules, Attributes("post", path="/healthz"))
    owner = [PolicyRule(frozenset({"get", "list"}), frozenset({""}), frozenset({"pods"}))]
    assert covers(owner, parse_rules(read_pods()))  # watch is not held
    assert not covers(owner, parse_rules([{"apiGroups": [""], "resources": ["pods"],
                                           "verbs": ["get"]}]))  # fmt: skip
    star = parse_rules([{"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]}])
    assert covers(owner, star)  # a requested * is covered only by an owned *


def test_a_role_in_one_namespace_does_not_reach_another(
    cluster: Cluster, admin: GrpcApiClient
) -> None:
    admin.create("Role", role("pod-reader", read_pods()), "a")
    admin.create("RoleBinding", binding("read-pods", "Role", "pod-reader", "User", "jane"), "a")
    admin.create("Pod", pod("p"), "a")
    admin.create("Pod", pod("p"), "b")
    with user(cluster, "jane") as jane:
        assert jane.get("Pod", "p", "a")["metadata"]["name"] == "p"
        assert len(jane.list("Pod", "a").items) == 1
        jane.watch("Pod", "a").stop()
        with pytest.raises(Forbidden) as refused:
            jane.list("Pod", "b")
        assert str(refused.value) == (
            'pods is forbidden: User "jane" cannot list resource "pods" in API group "" '
            'in the namespace "b"'
        )
        with pytest.raises(Forbidden):
            jane.list("Pod")  # all namespaces needs a cluster-wide grant
        with pytest.raises(
            Forbidden, match='pods "p" is forbidden: User "jane" cannot delete resource "pods"'
        ):
            jane.delete("Pod", "p", "a")
        with pytest.raises(Forbidden):
            jane.get("Secret", "x", "a")


def test_a_cluster_role_bound_in_a_namespace_and_cluster_wide(
    cluster: Cluster, admin: GrpcApiClient
) -> None:
    secret_reader = [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "watch", "list"]}
    ]
    admin.create("ClusterRole", role("secret-reader", secret_reader, "ClusterRole"))
    admin.create("RoleBinding", binding("read-secrets", "ClusterRole", "secret-reader", "User",
                                        "dave"), "development")  # fmt: skip
    admin.create("ClusterRoleBinding", binding("read-secrets-global", "ClusterRole",
                 "secret-reader", "Group", "manager", "ClusterRoleBinding"))  # fmt: skip
    for ns in ("development", "b"):
        admin.create("Secret", {"metadata": {"name": "s"}, "data": {}}, ns)
    with user(cluster, "dave") as dave:
        assert dave.get("Secret", "s", "development")
        with pytest.raises(Forbidden):
            dave.get("Secret", "s", "b")
    with user(cluster, "erin", "manager") as erin:
        assert erin.get("Secret", "s", "b")
        assert len(erin.list("Secret").items) >= 2


def test_bindings_take_effect_and_lapse_at_once(cluster: Cluster, admin: GrpcApiClient) -> None:
    admin.create("Pod", pod("p"), "a")
    with user(cluster, "kim") as kim:
        with pytest.raises(Forbidden):
            kim.get("Pod", "p", "a")
        admin.create("RoleBinding", binding("view", "ClusterRole", "view", "User", "kim"), "a")
        wait_for(lambda: kim.get("Pod", "p", "a"), timeout=10)
        with pytest.raises(Forbidden):  # view does not include secrets
            kim.list("Secret", "a")
        admin.delete("RoleBinding", "view", "a")

        def refused() -> bool:
            try:
                kim.get("Pod", "p", "a")
            except Forbidden:
                return True
            return False

        wait_for(refused, timeout=10)


def test_default_roles_and_masters(cluster: Cluster, admin: GrpcApiClient) -> None:
    edit = admin.get("ClusterRole", "edit")
    assert edit["aggregationRule"]["clusterRoleSelectors"]
    resources = {r for rule in edit["rules"] for r in rule.get("resources", [])}
    assert {"pods", "secrets", "deployments"} <= resources
    admin_role = admin.get("ClusterRole", "admin")
    assert any("rolebindings" in rule.get("resources", []) for rule in admin_role["rules"])
    view = admin.get("ClusterRole", "view")
    assert not any("secrets" in rule.get("resources", []) for rule in view["rules"])
    with user(cluster, "root", "system:masters") as root:
        assert root.whoami()["admin"] is True
        root.create("Namespace", {"metadata": {"name": "made-by-root"}})


def test_escalation_is_refused(cluster: Cluster, admin: GrpcApiClient) -> None:
    # Explicit verbs: "*" would include escalate and bind.
    manage = [{"apiGroups": [RBAC], "resources": ["roles", "rolebindings"],
               "verbs": ["get", "list", "create", "update", "patch", "delete"]},
              *read_pods()]  # fmt: skip
    admin.create("Role", role("manager", manage), "a")
    admin.create("RoleBinding", binding("alice-manager", "Role", "manager", "User", "alice"), "a")
    admin.create("Role", role("pod-deleter", [{"apiGroups": [""], "resources": ["pods"],
                                               "verbs": ["delete"]}]), "a")  # fmt: skip
    with user(cluster, "alice") as alice:
        alice.create("Role", role("reader", read_pods()), "a")  # held: allowed
        with pytest.raises(Forbidden, match="escalation"):
            alice.create("Role", role("deleter", [{"apiGroups": [""], "resources": ["pods"],
                                                   "verbs": ["delete"]}]), "a")  # fmt: skip
        with pytest.raises(Forbidden, match="escalation"):
            alice.patch("Role", "reader", {"rules": [{"apiGroups": ["*"], "resources": ["*"],
                                                      "verbs": ["*"]}]}, "a")  # fmt: skip
        alice.create("RoleBinding", binding("bob-reads", "Role", "reader", "User", "bob"), "a")
        with pytest.raises(Forbidden, match='may not bind Role "pod-deleter"'):
            alice.create("RoleBinding", binding("bob-deletes", "Role", "pod-deleter", "User",
                                                "bob"), "a")  # fmt: skip
        with pytest.raises(Forbidden, match='may not bind ClusterRole "cluster-admin"'):
            alice.create("RoleBinding", binding("me-admin", "ClusterRole", "cluster-admin",
                                                "User", "alice"), "a")  # fmt: skip
    # The bind verb lets one grant a role one does not hold (and only that one).
    admin.create("Role", role("binder", [{"apiGroups": [RBAC], "resources": ["clusterroles"],
                                          "verbs": ["bind"], "resourceNames": ["view"]}]), "a")  # fmt: skip
    admin.create("RoleBinding", binding("alice-binder", "Role", "binder", "User", "alice"), "a")
    with user(cluster, "alice") as alice:
        wait_for(lambda: alice.create("RoleBinding", binding("bob-views", "ClusterRole", "view",
                                                             "User", "bob"), "a"), timeout=10)  # fmt: skip
        with pytest.raises(Forbidden):
            alice.create("RoleBinding", binding("bob-edits", "ClusterRole", "edit", "User",
                                                "bob"), "a")  # fmt: skip
    assert {b["metadata"]["name"] for b in admin.list("RoleBinding", "a").items} >= {
        "bob-reads", "bob-views"}  # fmt: skip


def test_access_reviews_and_token_reviews(cluster: Cluster, admin: GrpcApiClient) -> None:
    admin.create("Role", role("pod-reader", read_pods()), "a")
    admin.create("RoleBinding", binding("read-pods", "Role", "pod-reader", "User", "jane"), "a")

    def ssar(ns: str, verb: str = "list", resource: str = "pods") -> dict[str, Any]:
        return {"spec": {"resourceAttributes": {"namespace": ns, "verb": verb,
                                                "resource": resource}}}  # fmt: skip

    with user(cluster, "jane") as jane:
        assert jane.create("SelfSubjectAccessReview", ssar("a"))["status"]["allowed"] is True
        assert jane.create("SelfSubjectAccessReview", ssar("b"))["status"]["allowed"] is False
        with pytest.raises(Forbidden):  # may not ask about others
            jane.create("SubjectAccessReview", {"spec": {"user": "x", **ssar("a")["spec"]}})
        with pytest.raises(Invalid, match="create only"):
            jane.list("SelfSubjectAccessReview")
    sar = admin.create("SubjectAccessReview", {"spec": {"user": "jane", **ssar("a")["spec"]}})
    assert sar["status"]["allowed"] is True
    assert cluster.server.authority is not None
    token = cluster.server.authority.user_token("jane", ("dev",))
    review = admin.create("TokenReview", {"spec": {"token": token}})
    assert review["status"]["authenticated"] is True
    assert review["status"]["user"]["username"] == "jane"
    assert set(review["status"]["user"]["groups"]) == {"dev", "system:authenticated"}
    bad = admin.create("TokenReview", {"spec": {"token": token[:-2] + "xx"}})
    assert bad["status"]["authenticated"] is False
    assert not admin.list("Pod", "a", ListOptions()).items


def test_rbac_objects_are_validated(admin: GrpcApiClient) -> None:
    with pytest.raises(Invalid, match=r"rules\[0\].verbs: required"):
        admin.create("Role", role("r", [{"apiGroups": [""], "resources": ["pods"]}]), "a")
    with pytest.raises(Invalid, match="only ClusterRoles"):
        admin.create("Role", role("r", [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]), "a")
    with pytest.raises(Invalid, match=r"roleRef.kind"):
        admin.create("RoleBinding", binding("b", "Nope", "x", "User", "u"), "a")
    admin.create("RoleBinding", binding("b", "ClusterRole", "view", "User", "u"), "a")
    with pytest.raises(Invalid, match="roleRef: field is immutable"):
        admin.patch("RoleBinding", "b", {"roleRef": {"name": "edit"}}, "a")


def test_component_roles_are_reconciled_at_start(cluster: Cluster, admin: GrpcApiClient) -> None:
    """An older data dir's scheduler role (it read every core kind, Secrets
    included) becomes this version's at the next start; an admin's
    autoupdate "false" keeps theirs."""
    from controlplane.apiserver.rbaccomponents import ROLES
    from controlplane.apiserver.rbacdefaults import AUTOUPDATE, ensure_defaults

    old = [{"apiGroups": [""], "resources": ["*"], "verbs": ["get", "list", "watch"]}]
    role = admin.get("ClusterRole", "system:kube-scheduler")
    role["rules"] = old
    admin.update("ClusterRole", role)
    ensure_defaults(cluster.server.registry)
    assert (
        admin.get("ClusterRole", "system:kube-scheduler")["rules"] == ROLES["system:kube-scheduler"]
    )
    role = admin.get("ClusterRole", "system:volcano-scheduler")
    role["rules"] = old
    role["metadata"].setdefault("annotations", {})[AUTOUPDATE] = "false"
    admin.update("ClusterRole", role)
    ensure_defaults(cluster.server.registry)
    assert admin.get("ClusterRole", "system:volcano-scheduler")["rules"] == old


def test_upstream_volcano_rbac_leaves_the_batch_schedulers_own_alone(
    cluster: Cluster, admin: GrpcApiClient
) -> None:
    """Volcano's helm chart names its scheduler's ClusterRole `volcano-scheduler`
    and binding `volcano-scheduler-role`, bound to its ServiceAccount: applied
    beside skiff they are Volcano's alone; skiff's are `system:volcano-scheduler`,
    reconciled at start (a subject removed comes back), and what an older skiff
    made under Volcano's names (its bootstrapping label) is removed then."""
    from controlplane.apiserver.rbacdefaults import ensure_defaults

    admin.create("ClusterRole", {"metadata": {"name": "volcano-scheduler"}, "rules": []})
    admin.create("ClusterRoleBinding", {
        "metadata": {"name": "volcano-scheduler-role"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "volcano-scheduler"},
        "subjects": [{"kind": "ServiceAccount", "name": "volcano-scheduler",
                      "namespace": "volcano-system"}],
    })  # fmt: skip
    ours = admin.get("ClusterRoleBinding", "system:volcano-scheduler")
    assert ours["subjects"] == [
        {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "User",
            "name": "system:volcano-scheduler",
        }
    ]
    ours["subjects"] = []
    admin.update("ClusterRoleBinding", ours)
    ensure_defaults(cluster.server.registry)
    assert admin.get("ClusterRoleBinding", "system:volcano-scheduler")["subjects"][0]["name"] == (
        "system:volcano-scheduler"
    )
    assert admin.get("ClusterRoleBinding", "volcano-scheduler-role")["subjects"][0]["kind"] == (
        "ServiceAccount"
    )
    # An older skiff's objects under Volcano's names go at the next start.
    legacy = admin.get("ClusterRole", "volcano-scheduler")
    legacy["metadata"]["labels"] = {"kubernetes.io/bootstrapping": "rbac-defaults"}
    admin.update("ClusterRole", legacy)
    ensure_defaults(cluster.server.registry)
    with pytest.raises(NotFound):
        admin.get("ClusterRole", "volcano-scheduler")
    assert admin.get("ClusterRoleBinding", "volcano-scheduler-role")  # not ours: kept
