"""CEL's `authorizer` variable through the real API with kubectl 1.33, as
users with and without the permission (skiff user tokens, RBAC):

- ValidatingAdmissionPolicy validations and messageExpression: KEP-3488's
  "only a user with a specific permission can set a particular field";
- a policy's matchConditions (Kubernetes' documented "breakglass" check)
  and `authorizer.requestResource`;
- an admission webhook's matchConditions: the documented breakglass
  example of the webhook docs (users authorized to `breakglass` on the
  webhook configuration skip the webhook)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.harness.wait import wait_for
from tests.harness.webhook_server import WebhookServer, review_response
from tests.integration.rest.conftest import Cluster

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("need_kubectl")]

NS = "cel-authz"
RBAC = "rbac.authorization.k8s.io/v1"
ADMISSION = "admissionregistration.k8s.io/v1"
CONFIGMAPS = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
               "resources": ["configmaps"]}]  # fmt: skip


def role(name: str, rules: list[dict[str, Any]], users: list[str], cluster_wide: bool = False
         ) -> list[dict[str, Any]]:  # fmt: skip
    kind = "ClusterRole" if cluster_wide else "Role"
    meta = {"name": name} if cluster_wide else {"name": name, "namespace": NS}
    subjects = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": u}
                for u in users]  # fmt: skip
    return [{"apiVersion": RBAC, "kind": kind, "metadata": meta, "rules": rules},
            {"apiVersion": RBAC, "kind": f"{kind}Binding", "metadata": meta,
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
             "subjects": subjects}]  # fmt: skip


@pytest.fixture(scope="module")
def tokens(cluster: Cluster) -> Iterator[dict[str, str]]:
    """alice: may use the critical tier and delete configmaps; bob: neither;
    carol: breakglass on the policy and the webhook configuration. All may
    create and update configmaps in the namespace."""
    objs = [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": NS, "labels": {"cel-authz": "on"}}},
        *role("cm-editor", [{"apiGroups": [""], "resources": ["configmaps"],
                             "verbs": ["create", "update", "get", "list"]}],
              ["alice", "bob", "carol"]),
        *role("cm-deleter", [{"apiGroups": [""], "resources": ["configmaps"],
                              "verbs": ["delete"]}], ["alice"]),
        *role("critical-tier", [{"apiGroups": ["example.com"], "resources": ["tiers"],
                                 "resourceNames": ["critical"], "verbs": ["use"]}],
              ["alice"], cluster_wide=True),
        *role("breakglass", [{"apiGroups": ["admissionregistration.k8s.io"],
                              "resources": ["validatingadmissionpolicies",
                                            "validatingwebhookconfigurations"],
                              "verbs": ["breakglass"]}], ["carol"], cluster_wide=True),
    ]  # fmt: skip
    apply(cluster, objs)
    authority = cluster.running.server.authority
    assert authority is not None
    try:
        yield {u: authority.user_token(u) for u in ("alice", "bob", "carol")}
    finally:
        for o in reversed(objs):
            cluster.kubectl("delete", o["kind"].lower(), o["metadata"]["name"], "--wait=false",
                            "--ignore-not-found", *(["-n", NS] if o["kind"] in ("Role",
                            "RoleBinding") else []), check=False)  # fmt: skip


def apply(cluster: Cluster, objs: list[dict[str, Any]]) -> None:
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": objs})
    cluster.kubectl("apply", "-f", "-", input=text)


def as_user(cluster: Cluster, token: str, *args: str) -> Any:
    return cluster.kubectl(f"--token={token}", *args, check=False)


def labelled(cluster: Cluster, token: str, name: str, labels: tuple[str, ...]) -> Any:
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": NS,
                        "labels": dict(x.split("=", 1) for x in labels)},
           "data": {"a": "b"}}  # fmt: skip
    return cluster.kubectl(f"--token={token}", "create", "-f", "-", input=json.dumps(obj),
                           check=False)  # fmt: skip


@contextmanager
def policy_installed(cluster: Cluster, name: str, **spec: Any) -> Iterator[None]:
    body = {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": CONFIGMAPS}, **spec}
    binding = {"policyName": name, "validationActions": ["Deny"],
               "matchResources": {"namespaceSelector": {"matchLabels": {"cel-authz": "on"}}}}  # fmt: skip
    apply(cluster, [
        {"apiVersion": ADMISSION, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
         "spec": body},
        {"apiVersion": ADMISSION, "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": f"{name}-binding"}, "spec": binding},
    ])  # fmt: skip
    cache = cluster.running.server.policies
    wait_for(lambda: any(b["metadata"]["name"] == f"{name}-binding" for b, _ in cache.pairs()),
             10, message=f"{name} in force")  # fmt: skip
    try:
        yield
    finally:
        cluster.kubectl("delete", "validatingadmissionpolicybinding", f"{name}-binding")
        cluster.kubectl("delete", "validatingadmissionpolicy", name)
        wait_for(lambda: not cache.pairs() or all(
            b["metadata"]["name"] != f"{name}-binding" for b, _ in cache.pairs()), 10)  # fmt: skip
        cluster.kubectl("delete", "configmaps", "-n", NS, "-l", "test=cel-authz", check=False)


CRITICAL = ("!has(object.metadata.labels) || !('tier' in object.metadata.labels) || "
            "object.metadata.labels.tier != 'critical' || "
            "authorizer.group('example.com').resource('tiers').name('critical')"
            ".check('use').allowed()")  # fmt: skip


def test_only_a_user_with_the_permission_may_set_the_field(
    cluster: Cluster, tokens: dict[str, str]
) -> None:
    name = "critical-tier.example.com"
    with policy_installed(cluster, name, validations=[{
        "expression": CRITICAL, "reason": "Forbidden",
        "messageExpression": "'user ' + request.userInfo.username + "
                             "' may not use the critical tier'"}]):  # fmt: skip
        done = labelled(cluster, tokens["alice"], "a-critical", ("tier=critical", "test=cel-authz"))
        assert done.returncode == 0, done.stderr
        done = labelled(cluster, tokens["bob"], "b-critical", ("tier=critical", "test=cel-authz"))
        assert done.returncode != 0
        assert (f"ValidatingAdmissionPolicy '{name}' with binding '{name}-binding' denied "
                "request: user bob may not use the critical tier") in done.stderr  # fmt: skip
        done = labelled(cluster, tokens["bob"], "b-plain", ("tier=plain", "test=cel-authz"))
        assert done.returncode == 0, done.stderr


def test_match_conditions_breakglass_and_the_request_resource(
    cluster: Cluster, tokens: dict[str, str]
) -> None:
    name = "frozen.example.com"
    breakglass = (f"!authorizer.group('admissionregistration.k8s.io')"
                  f".resource('validatingadmissionpolicies').name('{name}')"
                  ".check('breakglass').allowed()")  # fmt: skip
    with policy_installed(
        cluster, name,
        matchConditions=[{"name": "breakglass", "expression": breakglass}],
        validations=[{"expression": "authorizer.requestResource.check('delete').allowed()",
                      "message": "only users who may delete a configmap may write it"}],
    ):  # fmt: skip
        assert labelled(cluster, tokens["alice"], "a-frozen", ("test=cel-authz",)).returncode == 0
        done = labelled(cluster, tokens["bob"], "b-frozen", ("test=cel-authz",))
        assert done.returncode != 0
        assert "denied request: only users who may delete a configmap may write it" in done.stderr
        # carol may not delete either, but holds breakglass: the policy does not apply
        done = labelled(cluster, tokens["carol"], "c-frozen", ("test=cel-authz",))
        assert done.returncode == 0, done.stderr


def test_a_webhook_match_condition_lets_breakglass_users_skip_the_webhook(
    cluster: Cluster, tokens: dict[str, str]
) -> None:
    hook_name = "my-webhook.example.com"
    condition = ('!authorizer.group("admissionregistration.k8s.io")'
                 '.resource("validatingwebhookconfigurations").name("my-webhook.example.com")'
                 '.check("breakglass").allowed()')  # fmt: skip

    def refuse(review: Any) -> dict[str, Any]:
        return review_response(review, False, status={"message": "configmaps are frozen"})

    with WebhookServer(refuse) as server:
        config = {"apiVersion": ADMISSION, "kind": "ValidatingWebhookConfiguration",
                  "metadata": {"name": hook_name}, "webhooks": [{
                      "name": hook_name, "clientConfig": server.client_config("/"),
                      "rules": CONFIGMAPS, "sideEffects": "None",
                      "admissionReviewVersions": ["v1"],
                      "namespaceSelector": {"matchLabels": {"cel-authz": "on"}},
                      "matchConditions": [{"name": "breakglass", "expression": condition}]}]}  # fmt: skip
        apply(cluster, [config])
        held = cluster.running.server.webhook_configs.validating
        wait_for(lambda: hook_name in {h.name for h in held()}, 10, message="webhook in force")
        try:
            done = labelled(cluster, tokens["bob"], "b-hooked", ("test=cel-authz",))
            assert done.returncode != 0
            assert (f'admission webhook "{hook_name}" denied the request: '
                    "configmaps are frozen") in done.stderr  # fmt: skip
            calls = len(server.requests)
            done = labelled(cluster, tokens["carol"], "c-hooked", ("test=cel-authz",))
            assert done.returncode == 0, done.stderr
            assert len(server.requests) == calls  # carol's request never reached the webhook
        finally:
            cluster.kubectl("delete", "validatingwebhookconfiguration", hook_name)
            wait_for(lambda: hook_name not in {h.name for h in held()}, 10)
            cluster.kubectl("delete", "configmaps", "-n", NS, "-l", "test=cel-authz",
                            check=False)  # fmt: skip
