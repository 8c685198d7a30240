"""The ValidatingAdmissionPolicy plugin on fakes (no server): matching by
rules, exclusions, resourceNames and selectors; params by selector; the
Warn and Audit actions and auditAnnotations recorded for the request;
reasons mapped to status errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controlplane.apiserver import admission_context
from controlplane.apiserver.admission_context import Attributes
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.authz import Authorizer
from controlplane.apiserver.celauthz import CelAuthorizer
from controlplane.apiserver.policy.admission import AUDIT_KEY, PolicyAdmission
from controlplane.apiserver.policy.cache import PolicyCache
from controlplane.apiserver.rbacindex import RbacIndex
from machinery.apierrors import Forbidden, Invalid

ALL = [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
        "resources": ["configmaps"]}]  # fmt: skip


def admission(policies: list[dict[str, Any]], bindings: list[dict[str, Any]],
              params: list[dict[str, Any]] | None = None) -> PolicyAdmission:  # fmt: skip
    cache = PolicyCache()
    cache.policies = {p["metadata"]["name"]: p for p in policies}
    cache.bindings = {b["metadata"]["name"]: b for b in bindings}
    namespaces = {"team-a": {"metadata": {"name": "team-a", "labels": {"team": "a"}}},
                  "team-b": {"metadata": {"name": "team-b", "labels": {"team": "b"}}}}  # fmt: skip
    return PolicyAdmission(cache, lambda kind, ns, name: None,
                           lambda kind, ns: list(params or []), namespaces.get)  # fmt: skip


def policy(name: str = "p", rules: Any = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {
        "failurePolicy": "Fail", "matchConstraints": {"resourceRules": rules or ALL}, **spec}}  # fmt: skip


def binding(actions: list[str], name: str = "b", policy_name: str = "p",
            **spec: Any) -> dict[str, Any]:  # fmt: skip
    return {"metadata": {"name": name},
            "spec": {"policyName": policy_name, "validationActions": actions, **spec}}  # fmt: skip


def configmap(name: str = "cm", ns: str = "team-a", **data: str) -> Attributes:
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": ns, "labels": {"tier": "web"}}, "data": data}  # fmt: skip
    return Attributes("CREATE", "ConfigMap", ns, name, "", Identity("alice"), obj)


NEEDS_OWNER = [{"expression": "'owner' in object.data", "message": "needs an owner"}]


def test_deny_with_kubernetes_message_and_reason() -> None:
    adm = admission([policy(validations=NEEDS_OWNER)], [binding(["Deny"])])
    adm(configmap(owner="me"))
    with pytest.raises(Forbidden, match=r"^ValidatingAdmissionPolicy 'p' with binding 'b' "
                                        r"denied request: needs an owner$"):  # fmt: skip
        adm(configmap())
    invalid = [dict(NEEDS_OWNER[0], reason="Invalid")]
    with pytest.raises(Invalid):
        admission([policy(validations=invalid)], [binding(["Deny"])])(configmap())


def test_rules_exclusions_resource_names_and_selectors() -> None:
    rules = [dict(ALL[0], resourceNames=["only-this"])]
    adm = admission([policy(rules=rules, validations=NEEDS_OWNER)], [binding(["Deny"])])
    adm(configmap("other"))  # not named
    with pytest.raises(Forbidden):
        adm(configmap("only-this"))
    excluded = policy(validations=NEEDS_OWNER)
    excluded["spec"]["matchConstraints"]["excludeResourceRules"] = ALL
    admission([excluded], [binding(["Deny"])])(configmap())
    by_ns = binding(["Deny"], matchResources={"namespaceSelector": {"matchLabels": {"team": "b"}}})
    adm = admission([policy(validations=NEEDS_OWNER)], [by_ns])
    adm(configmap(ns="team-a"))
    with pytest.raises(Forbidden):
        adm(configmap(ns="team-b"))
    by_obj = policy(validations=NEEDS_OWNER)
    by_obj["spec"]["matchConstraints"]["objectSelector"] = {"matchLabels": {"tier": "db"}}
    admission([by_obj], [binding(["Deny"])])(configmap())


def test_warn_audit_and_audit_annotations_are_recorded() -> None:
    spec: dict[str, Any] = {"validations": NEEDS_OWNER,
            "auditAnnotations": [{"key": "size", "valueExpression": "string(size(object.data))"}]}  # fmt: skip
    adm = admission([policy(**spec)], [binding(["Warn", "Audit"])])
    with admission_context.recording() as recorder:
        adm(configmap(x="1"))
    assert recorder.warnings == [
        "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': needs an owner"
    ]
    assert recorder.annotations["p/size"] == "1"
    assert json.loads(recorder.annotations[AUDIT_KEY]) == [{
        "message": "needs an owner", "policy": "p", "binding": "b", "expressionIndex": 0,
        "validationActions": ["Warn", "Audit"]}]  # fmt: skip


def test_params_by_selector_each_judged_and_not_found_actions() -> None:
    spec: dict[str, Any] = {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "validations": [{"expression": "size(object.data) <= int(params.data.max)",
                             "messageExpression": "'at most ' + params.data.max + ' keys'"}]}  # fmt: skip
    ref = {"selector": {"matchLabels": {"limits": "yes"}}, "parameterNotFoundAction": "Deny"}
    limits = [{"metadata": {"name": "l1", "labels": {"limits": "yes"}}, "data": {"max": "2"}},
              {"metadata": {"name": "l2", "labels": {"limits": "no"}}, "data": {"max": "0"}}]  # fmt: skip
    adm = admission([policy(**spec)], [binding(["Deny"], paramRef=ref)], limits)
    adm(configmap(a="1", b="2"))
    with pytest.raises(Forbidden, match="denied request: at most 2 keys"):
        adm(configmap(a="1", b="2", c="3"))
    none = admission([policy(**spec)], [binding(["Deny"], paramRef=ref)], [])
    with pytest.raises(Forbidden, match="no params found for policy binding with `Deny`"):
        none(configmap())
    allow = admission([policy(**spec)], [binding(["Deny"], paramRef=dict(
        ref, parameterNotFoundAction="Allow"))], [])  # fmt: skip
    allow(configmap(a="1", b="2", c="3"))


def test_failure_policy_ignore_skips_errors_and_policies_skip_their_own_kinds() -> None:
    broken = [{"expression": "object.data.missing == 'x'"}]
    admission([policy(validations=broken, failurePolicy="Ignore")], [binding(["Deny"])])(
        configmap())  # fmt: skip
    with pytest.raises(Invalid, match="resulted in error: no such key: missing"):
        admission([policy(validations=broken)], [binding(["Deny"])])(configmap())
    every = [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]
    adm = admission([policy(rules=every, validations=[{"expression": "false"}])],
                    [binding(["Deny"])])  # fmt: skip
    vap = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
           "metadata": {"name": "x"}, "spec": {}}  # fmt: skip
    adm(Attributes("CREATE", "ValidatingAdmissionPolicy", "", "x", "", Identity("a"), vap))
    with pytest.raises(Forbidden):
        adm(configmap())


def _cel_authorizer() -> CelAuthorizer:
    """alice may `use` the critical tier; nobody else may."""
    objs = [("ClusterRole", {"metadata": {"name": "tier"}, "rules": [
                {"apiGroups": ["example.com"], "resources": ["tiers"],
                 "resourceNames": ["critical"], "verbs": ["use"]}]}),
            ("ClusterRoleBinding", {"metadata": {"name": "tier"},
                                    "roleRef": {"kind": "ClusterRole", "name": "tier"},
                                    "subjects": [{"kind": "User", "name": "alice"}]})]  # fmt: skip
    index = RbacIndex()
    index.load((kind, json.dumps(obj).encode()) for kind, obj in objs)
    return CelAuthorizer(Authorizer(rbac=index))


def test_authorizer_in_validations_conditions_variables_messages_and_annotations() -> None:
    use = "authorizer.group('example.com').resource('tiers').name('critical').check('use')"
    spec: dict[str, Any] = {
        "matchConditions": [{"name": "not-admins", "expression":
                             "!authorizer.path('/admin').check('get').allowed()"}],
        "variables": [{"name": "mayUse", "expression": f"{use}.allowed()"}],
        "validations": [{"expression": "variables.mayUse",
                         "messageExpression": f"'may not: ' + string({use}.allowed())"}],
        "auditAnnotations": [{"key": "tier", "valueExpression": f"{use}.reason()"},
                             {"key": "own", "valueExpression":
                              "authorizer.requestResource.check('create').errored() ? 'err' : 'ok'"}],
    }  # fmt: skip
    cache = PolicyCache()
    cache.policies = {"p": policy(**spec)}
    cache.bindings = {"b": binding(["Deny"])}
    adm = PolicyAdmission(cache, lambda kind, ns, name: None, lambda kind, ns: [],
                          lambda ns: None, _cel_authorizer())  # fmt: skip
    with admission_context.recording() as recorder:
        adm(configmap())  # alice
    assert recorder.annotations["p/tier"] == (
        'RBAC: allowed by ClusterRoleBinding "tier" of ClusterRole "tier" to User "alice"'
    )
    assert recorder.annotations["p/own"] == "ok"
    bob = configmap()
    bob = Attributes(bob.operation, bob.kind, bob.namespace, bob.name, "", Identity("bob"), bob.obj)
    with pytest.raises(Forbidden, match=r"denied request: may not: false$"):
        adm(bob)
    admin = Attributes(bob.operation, bob.kind, bob.namespace, bob.name, "",
                       Identity("root", admin=True, groups=("system:masters",)), bob.obj)  # fmt: skip
    adm(admin)  # system:masters: the match condition is false, the policy does not apply
    # without an authorizer the variable is there, and every check() is an error
    plain = admission([policy(validations=[{"expression": f"{use}.errored()"}])],
                      [binding(["Deny"])])  # fmt: skip
    plain(configmap())
