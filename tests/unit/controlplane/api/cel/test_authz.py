"""Kubernetes' CEL authorizer library (authz.go's documented examples) on
skiff's engine, answered by the real Authorizer over an RBAC index: a
user with and without the permission, paths, serviceAccount(),
requestResource, the errors Kubernetes gives for empty or invalid
arguments, and a check with no authorizer bound."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controlplane.api.cel import authz
from controlplane.api.cel.engine import EvalError
from controlplane.api.cel.match_conditions import VARIABLES
from controlplane.api.cel.programs import program
from controlplane.apiserver.auth import AUTHENTICATED, Identity
from controlplane.apiserver.authz import Authorizer
from controlplane.apiserver.celauthz import CelAuthorizer
from controlplane.apiserver.rbacindex import RbacIndex


def _rbac() -> RbacIndex:
    objs: list[tuple[str, dict[str, Any]]] = [
        ("Role", {"metadata": {"name": "deployer", "namespace": "team"},
                  "rules": [{"apiGroups": ["apps"], "resources": ["deployments", "deployments/scale"],
                             "verbs": ["create", "update"]}]}),
        ("RoleBinding", {"metadata": {"name": "alice-deployer", "namespace": "team"},
                         "roleRef": {"kind": "Role", "name": "deployer"},
                         "subjects": [{"kind": "User", "name": "alice"}]}),
        ("ClusterRole", {"metadata": {"name": "approver"},
                         "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["signers"],
                                    "resourceNames": ["example.com/*"], "verbs": ["approve"]}]}),
        ("ClusterRoleBinding", {"metadata": {"name": "approver"},
                                "roleRef": {"kind": "ClusterRole", "name": "approver"},
                                "subjects": [{"kind": "User", "name": "alice"}]}),
        ("ClusterRole", {"metadata": {"name": "health"},
                         "rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]}),
        ("ClusterRoleBinding", {"metadata": {"name": "health"},
                                "roleRef": {"kind": "ClusterRole", "name": "health"},
                                "subjects": [{"kind": "User", "name": "alice"},
                                             {"kind": "ServiceAccount", "name": "robot",
                                              "namespace": "team"}]}),
    ]  # fmt: skip
    index = RbacIndex()
    index.load((kind, json.dumps(obj).encode()) for kind, obj in objs)
    return index


CEL = CelAuthorizer(Authorizer(rbac=_rbac()))
OWN = {"group": "apps", "resource": "deployments", "subresource": "", "namespace": "team",
       "name": "web"}  # fmt: skip


def run(expression: str, user: str = "alice", **values: Any) -> Any:
    who = Identity(user, groups=(AUTHENTICATED,))
    with authz.checking(CEL.check):
        return program(expression, VARIABLES).evaluate(
            {"authorizer": CEL.variable(who, OWN), **values}
        )


def test_resource_checks_for_a_user_with_and_without_the_permission() -> None:
    create = "authorizer.group('apps').resource('deployments').namespace('team').check('create')"
    assert run(f"{create}.allowed()") is True
    assert run(f"{create}.reason()") == (
        'RBAC: allowed by RoleBinding "alice-deployer/team" of Role "deployer" to User "alice"'
    )
    assert run(f"{create}.allowed()", user="bob") is False
    assert run(f"{create}.reason()", user="bob") == ""  # RBAC's "no opinion"
    assert run(f"{create}.errored()", user="bob") is False
    assert run(f"{create}.error()", user="bob") == ""
    elsewhere = "authorizer.group('apps').resource('deployments').namespace('other')"
    assert run(f"{elsewhere}.check('create').allowed()") is False
    scale = "authorizer.group('apps').resource('deployments').subresource('scale')"
    assert run(f"{scale}.namespace('team').name('web').check('update').allowed()") is True
    status = "authorizer.group('apps').resource('deployments').subresource('status')"
    assert run(f"{status}.namespace('team').check('update').allowed()") is False
    assert run("authorizer.group('').resource('pods').namespace('team').check('create')"
               ".allowed()") is False  # fmt: skip


def test_request_resource_path_and_service_account() -> None:
    assert run("authorizer.requestResource.check('create').allowed()") is True
    assert run("authorizer.requestResource.check('delete').allowed()") is False
    assert run("authorizer.requestResource.check('create').allowed()", user="bob") is False
    assert run("authorizer.path('/healthz').check('get').allowed()") is True
    assert run("authorizer.path('/metrics').check('get').allowed()") is False
    robot = "authorizer.serviceAccount('team', 'robot')"
    assert run(f"{robot}.path('/healthz').check('get').allowed()", user="bob") is True
    assert run(f"{robot}.path('/healthz').check('get').reason()") == (
        'RBAC: allowed by ClusterRoleBinding "health" of ClusterRole "health" to '
        'ServiceAccount "robot/team"'
    )
    assert run(f"{robot}.group('apps').resource('deployments').namespace('team')"
               ".check('create').allowed()") is False  # fmt: skip


def test_the_documented_argument_errors() -> None:
    for expression, message in [
        ("authorizer.path('  ')", "path must not be empty"),
        ("authorizer.group('apps').resource('')", "resource must not be empty"),
        ("authorizer.serviceAccount('not@a#valid!namespace', 'validname')",
         "Invalid service account namespace"),
        ("authorizer.serviceAccount('valid', 'invalid@*name')", "Invalid service account name"),
    ]:  # fmt: skip
        with pytest.raises(EvalError, match=message):
            run(expression)


def test_a_check_without_an_authorizer_is_an_errored_decision() -> None:
    variable = CEL.variable(Identity("alice"), OWN)
    decision = "authorizer.path('/healthz').check('get')"
    found = program(f"[{decision}.allowed(), {decision}.errored()]", VARIABLES).evaluate(
        {"authorizer": variable})  # fmt: skip
    assert found == [False, True]


def test_a_node_credential_is_asked_through_the_node_authorizer() -> None:
    node = Identity("system:node:n1", node="n1", groups=("system:nodes", AUTHENTICATED))
    expression = "authorizer.group('').resource('nodes').name('n1').check('get').allowed()"
    with authz.checking(CEL.check):
        found = program(expression, VARIABLES).evaluate({"authorizer": CEL.variable(node, None)})
    assert found is True


def test_the_kep_certificate_approval_example() -> None:
    """KEP-3488's CertificateApproval policy (in the library's final form):
    approving needs `approve` on the signer's name or on `<domain>/*`."""
    signer = "authorizer.group('certificates.k8s.io').resource('signers')"
    expression = (f"{signer}.name(oldObject.spec.signerName).check('approve').allowed() || "
                  f"{signer}.name([oldObject.spec.signerName.split('/')[0], '*'].join('/'))"
                  ".check('approve').allowed()")  # fmt: skip
    old = {"spec": {"signerName": "example.com/my-signer"}}
    assert run(expression, oldObject=old) is True
    assert run(expression, user="bob", oldObject=old) is False
    other = {"spec": {"signerName": "other.io/signer"}}
    assert run(expression, oldObject=other) is False
