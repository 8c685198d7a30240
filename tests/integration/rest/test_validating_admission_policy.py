"""ValidatingAdmissionPolicy through the real API with kubectl 1.33:
Kubernetes' documented examples (kubernetes.io, "Validating Admission
Policy"), each with an allowed and a refused request: the replicas limit
bound to a namespace by label, params from a custom resource, variables
and namespaceObject with messageExpression, matchConditions, Warn and
Audit actions, auditAnnotations, failurePolicy on an error, a policy that
does not compile refused when written, and status.typeChecking."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.api import crd as crd_module
from tests.integration.rest.conftest import Cluster

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("need_kubectl")]

NS = "vap-test"
RULES = [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
          "resources": ["deployments"]}]  # fmt: skip


def policy(name: str, **spec: Any) -> dict[str, Any]:
    body = {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": RULES}, **spec}
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name}, "spec": body}  # fmt: skip


def binding(name: str, policy_name: str, actions: list[str], **spec: Any) -> dict[str, Any]:
    body = {"policyName": policy_name, "validationActions": actions, **spec}
    return {"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
            "spec": body}  # fmt: skip


def deployment(name: str, replicas: int, image: str = "example.com/app:1",
               labels: dict[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
    sel = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": NS, "labels": labels or {}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": sel},
                     "template": {"metadata": {"labels": sel},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}  # fmt: skip


def apply(cluster: Cluster, *objs: dict[str, Any]) -> Any:
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objs)})
    return cluster.kubectl("apply", "-f", "-", input=text, check=False)


@pytest.fixture(scope="module")
def namespace(cluster: Cluster) -> Iterator[None]:
    cluster.kubectl("create", "namespace", NS)
    cluster.kubectl("label", "namespace", NS, "environment=test")
    try:
        yield
    finally:
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)


@pytest.fixture
def cleanup(cluster: Cluster, namespace: None) -> Iterator[list[str]]:
    names: list[str] = []  # "kind/name"
    try:
        yield names
    finally:
        for ref in reversed(names):
            cluster.kubectl("delete", ref, "--ignore-not-found", *(
                ["-n", NS] if ref.startswith("deployment") else []), check=False)  # fmt: skip
        cluster.kubectl("delete", "deployments", "--all", "-n", NS, check=False)


def install(cluster: Cluster, cleanup: list[str], *objs: dict[str, Any]) -> None:
    done = apply(cluster, *objs)
    assert done.returncode == 0, done.stderr
    for o in objs:
        cleanup.append(f"{o['kind'].lower()}/{o['metadata']['name']}")


def test_documented_replica_limit_by_namespace_label(cluster: Cluster, cleanup: list[str]) -> None:
    install(cluster, cleanup,
            policy("demo-policy.example.com",
                   validations=[{"expression": "object.spec.replicas <= 5"}]),
            binding("demo-binding-test.example.com", "demo-policy.example.com", ["Deny"],
                    matchResources={"namespaceSelector": {"matchLabels": {"environment": "test"}}}))  # fmt: skip
    assert apply(cluster, deployment("small", 3)).returncode == 0
    done = apply(cluster, deployment("big", 6))
    assert done.returncode != 0
    assert ("ValidatingAdmissionPolicy 'demo-policy.example.com' with binding "
            "'demo-binding-test.example.com' denied request: failed expression: "
            "object.spec.replicas <= 5") in done.stderr  # fmt: skip
    # an update is judged too; another namespace's label does not match
    done = cluster.kubectl("scale", "deployment", "small", "-n", NS, "--replicas=9", check=False)
    assert done.returncode != 0 and "denied request" in done.stderr
    cluster.kubectl("create", "namespace", "vap-other")
    try:
        other = deployment("big", 6)
        other["metadata"]["namespace"] = "vap-other"
        assert apply(cluster, other).returncode == 0
    finally:
        cluster.kubectl("delete", "namespace", "vap-other", "--wait=false", check=False)


REPLICA_LIMIT_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "replicalimits.rules.example.com"},
    "spec": {"group": "rules.example.com", "scope": "Namespaced",
             "names": {"plural": "replicalimits", "singular": "replicalimit",
                       "kind": "ReplicaLimit"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                 "openAPIV3Schema": {"type": "object", "properties": {
                     "maxReplicas": {"type": "integer"}}}}}]},
}  # fmt: skip


def test_documented_params_and_message_expression(cluster: Cluster, cleanup: list[str]) -> None:
    done = apply(cluster, REPLICA_LIMIT_CRD)
    assert done.returncode == 0, done.stderr
    try:
        cluster.kubectl("wait", "--for=condition=Established",
                        "crd/replicalimits.rules.example.com")  # fmt: skip
        limit = {"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit",
                 "metadata": {"name": "replica-limit-test.example.com", "namespace": NS},
                 "maxReplicas": 3}  # fmt: skip
        install(cluster, cleanup,
                policy("replicalimit-policy.example.com",
                       paramKind={"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit"},
                       validations=[{
                           "expression": "object.spec.replicas <= params.maxReplicas",
                           "messageExpression": "'object.spec.replicas must be no greater than ' "
                                                "+ string(params.maxReplicas)",
                           "reason": "Invalid"}]),
                binding("replicalimit-binding-test.example.com",
                        "replicalimit-policy.example.com", ["Deny"],
                        paramRef={"name": "replica-limit-test.example.com", "namespace": NS,
                                  "parameterNotFoundAction": "Deny"}))  # fmt: skip
        # no params yet: parameterNotFoundAction Deny refuses
        done = apply(cluster, deployment("p", 2))
        assert done.returncode != 0
        assert (
            "no params found for policy binding with `Deny` parameterNotFoundAction" in done.stderr
        )
        assert apply(cluster, limit).returncode == 0
        assert apply(cluster, deployment("p", 2)).returncode == 0
        done = apply(cluster, deployment("q", 4))
        assert done.returncode != 0
        assert ("ValidatingAdmissionPolicy 'replicalimit-policy.example.com' with binding "
                "'replicalimit-binding-test.example.com' denied request: "
                "object.spec.replicas must be no greater than 3") in done.stderr  # fmt: skip
    finally:
        cluster.kubectl("delete", "-f", "-", input=json.dumps(REPLICA_LIMIT_CRD), check=False)
        crd_module.unregister("replicalimits.rules.example.com")


def test_documented_variables_and_namespace_object(cluster: Cluster, cleanup: list[str]) -> None:
    install(cluster, cleanup, policy(
        "image-matches-namespace-environment.policy.example.com",
        variables=[
            {"name": "environment", "expression": "'environment' in namespaceObject.metadata."
             "labels ? namespaceObject.metadata.labels['environment'] : 'prod'"},
            {"name": "exempt", "expression": "'exempt' in object.metadata.labels && "
             "object.metadata.labels['exempt'] == 'true'"},
            {"name": "containers", "expression": "object.spec.template.spec.containers"},
            {"name": "containersToCheck",
             "expression": "variables.containers.filter(c, c.image.contains('example.com/'))"},
        ],
        validations=[{
            "expression": "variables.exempt || variables.containersToCheck.all(c, "
                          "c.image.startsWith(variables.environment + '.'))",
            "messageExpression": "'only ' + variables.environment + ' images are allowed in "
                                 "namespace ' + namespaceObject.metadata.name"}]),
        binding("image-matches-namespace-environment.binding",
                "image-matches-namespace-environment.policy.example.com", ["Deny"]))  # fmt: skip
    assert apply(cluster, deployment("good", 1, "test.example.com/app:1")).returncode == 0
    done = apply(cluster, deployment("bad", 1, "prod.example.com/app:1"))
    assert done.returncode != 0
    assert "denied request: only test images are allowed in namespace vap-test" in done.stderr
    exempt = deployment("bad", 1, "prod.example.com/app:1", labels={"exempt": "true"})
    assert apply(cluster, exempt).returncode == 0


def test_documented_match_conditions(cluster: Cluster, cleanup: list[str]) -> None:
    install(cluster, cleanup, policy(
        "demo-policy-conditions.example.com",
        matchConditions=[
            {"name": "exclude-leases", "expression": '!(request.resource.group == '
             '"coordination.k8s.io" && request.resource.resource == "leases")'},
            {"name": "exclude-kubelet-requests",
             "expression": '!("system:nodes" in request.userInfo.groups)'},
            {"name": "labelled", "expression": "'check' in object.metadata.labels"}],
        validations=[{"expression": "!object.metadata.name.contains('demo') || "
                                    "object.metadata.namespace == 'demo'"}]),
        binding("demo-binding-conditions", "demo-policy-conditions.example.com", ["Deny"]))  # fmt: skip
    assert apply(cluster, deployment("demo-unchecked", 1)).returncode == 0  # condition false
    done = apply(cluster, deployment("demo-checked", 1, labels={"check": "yes"}))
    assert done.returncode != 0
    assert "failed expression: !object.metadata.name.contains('demo')" in done.stderr
    assert apply(cluster, deployment("fine-checked", 1, labels={"check": "yes"})).returncode == 0


def test_warn_and_audit_actions_allow_with_a_warning(cluster: Cluster, cleanup: list[str]) -> None:
    install(cluster, cleanup,
            policy("warn-policy.example.com",
                   validations=[{"expression": "object.spec.replicas <= 2",
                                 "message": "more than 2 replicas"}],
                   auditAnnotations=[{"key": "high-replica-count", "valueExpression":
                                      "object.spec.replicas > 2 ? 'Deployment spec.replicas set "
                                      "to ' + string(object.spec.replicas) : null"}]),
            binding("warn-binding", "warn-policy.example.com", ["Warn", "Audit"]))  # fmt: skip
    done = apply(cluster, deployment("warned", 4))
    assert done.returncode == 0, done.stderr
    assert ("Warning: Validation failed for ValidatingAdmissionPolicy 'warn-policy.example.com' "
            "with binding 'warn-binding': more than 2 replicas") in done.stderr  # fmt: skip
    quiet = apply(cluster, deployment("quiet", 1))
    assert quiet.returncode == 0 and "Warning" not in quiet.stderr


def test_failure_policy_on_an_error(cluster: Cluster, cleanup: list[str]) -> None:
    install(cluster, cleanup,
            policy("fail-policy.example.com",
                   validations=[{"expression": "object.metadata.labels.team == 'a'"}]),
            binding("fail-binding", "fail-policy.example.com", ["Deny"]))  # fmt: skip
    done = apply(cluster, deployment("nolabel", 1))
    assert done.returncode != 0
    assert ("denied request: expression 'object.metadata.labels.team == 'a'' resulted in error: "
            "no such key: team") in done.stderr  # fmt: skip
    cluster.kubectl("patch", "validatingadmissionpolicy", "fail-policy.example.com",
                    "--type=merge", "-p", '{"spec": {"failurePolicy": "Ignore"}}')  # fmt: skip
    deadline = time.monotonic() + 10
    while apply(cluster, deployment("nolabel", 1)).returncode != 0:
        assert time.monotonic() < deadline, "failurePolicy Ignore not in force"
    done = apply(cluster, deployment("wrongteam", 1, labels={"team": "b"}))
    assert done.returncode != 0 and "failed expression" in done.stderr


def test_policy_that_does_not_compile_is_refused(cluster: Cluster) -> None:
    done = apply(cluster, policy("broken.example.com",
                                 validations=[{"expression": "object.spec.replicas <= "}]))  # fmt: skip
    assert done.returncode != 0
    assert ('The ValidatingAdmissionPolicy "broken.example.com" is '
            'invalid: spec.validations[0].expression: Invalid value: "object.spec.replicas <= ": '
            "compilation failed: ERROR: <input>:1:25: Syntax error:") in done.stderr  # fmt: skip
    bad = binding("b", "p", ["Deny", "Warn"])
    done = apply(cluster, bad)
    assert done.returncode != 0 and "must not contain both Deny and Warn" in done.stderr


def test_type_checking_status_and_kubectl_get(cluster: Cluster, cleanup: list[str]) -> None:
    install(cluster, cleanup, policy("typo.example.com",
                                     validations=[{"expression": "object.spec.replicass > 1"}]))  # fmt: skip
    deadline = time.monotonic() + 10
    status: dict[str, Any] = {}
    while not status.get("typeChecking"):
        assert time.monotonic() < deadline, f"no typeChecking status: {status}"
        got = cluster.kubectl("get", "validatingadmissionpolicy", "typo.example.com", "-o", "json")
        status = json.loads(got.stdout).get("status") or {}
    assert status["observedGeneration"] == 1
    assert status["typeChecking"]["expressionWarnings"] == [{
        "fieldRef": "spec.validations[0].expression",
        "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicass'\n"
                   " | object.spec.replicass > 1\n | ...........^\n"}]  # fmt: skip
    table = cluster.kubectl("get", "validatingadmissionpolicies").stdout
    assert table.split("\n")[0].split() == ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]
    assert "typo.example.com" in table
    explained = cluster.kubectl("explain", "validatingadmissionpolicy.spec.validations").stdout
    assert "messageExpression" in explained and "reason" in explained
