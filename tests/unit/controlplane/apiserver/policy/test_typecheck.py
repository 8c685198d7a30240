"""ValidatingAdmissionPolicy status.typeChecking (Kubernetes' TypeChecker):
built-in kinds, CRD kinds by the structural schema of the matched version,
params by paramKind (built-in or CRD), in Kubernetes' warning text: a
block per matched kind, `group/version, Kind=K: ERROR: ...`, each ending
in a newline; rules with a wildcard group or version are not checked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.api import crd
from controlplane.apiserver.policy.typecheck import warnings

GROUP = "typecheck.example.com"
OBJ: dict[str, Any] = {"type": "object", "properties": {
    "spec": {"type": "object", "properties": {
        "cronSpec": {"type": "string"},
        "max-size": {"type": "integer"},
        "limits": {"type": "object", "additionalProperties": {"type": "object", "properties": {
            "cpu": {"type": "string"}}}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    }},
}}  # fmt: skip


def _crd(plural: str, kind: str, versions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                     "versions": [{"name": v, "served": True, "storage": i == 0,
                                   "schema": {"openAPIV3Schema": schema}}
                                  for i, (v, schema) in enumerate(versions.items())]}}  # fmt: skip


@pytest.fixture
def crds() -> Iterator[None]:
    v2 = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "schedule": {"type": "string"}}}}}  # fmt: skip
    limits = {"type": "object", "properties": {"maxReplicas": {"type": "integer"}}}
    crd.register(_crd("crontabs", "CronTab", {"v1": OBJ, "v2": v2}))
    crd.register(_crd("replicalimits", "ReplicaLimit", {"v1": limits}))
    try:
        yield
    finally:
        crd.unregister(f"crontabs.{GROUP}")
        crd.unregister(f"replicalimits.{GROUP}")


def policy(expression: str, groups: list[str], resources: list[str], version: str = "v1",
           param: dict[str, str] | None = None, message: str = "") -> dict[str, Any]:  # fmt: skip
    validation = {"expression": expression}
    if message:
        validation["messageExpression"] = message
    spec: dict[str, Any] = {
        "matchConstraints": {"resourceRules": [{"apiGroups": groups, "apiVersions": [version],
                                                "operations": ["CREATE"],
                                                "resources": resources}]},
        "validations": [validation]}  # fmt: skip
    if param:
        spec["paramKind"] = param
    return {"metadata": {"name": "p"}, "spec": spec}


def test_builtin_kinds_in_kubernetes_words() -> None:
    found = warnings(policy("object.replicas > 1", ["apps"], ["deployments", "replicasets"]))
    block = "ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^\n"
    assert found == [{"fieldRef": "spec.validations[0].expression",
                      "warning": f"apps/v1, Kind=Deployment: {block}\n"
                                 f"apps/v1, Kind=ReplicaSet: {block}"}]  # fmt: skip
    core = warnings(policy("object.dataa.size() > 0", [""], ["configmaps"]))
    assert core[0]["warning"].startswith("/v1, Kind=ConfigMap: ERROR: <input>:1:7: ")
    assert warnings(policy("object.spec.replicas > 1", ["apps"], ["deployments"])) == []
    assert warnings(policy("object.replicas > 1", ["*"], ["deployments"])) == []


def test_crd_kinds_by_the_schema_of_the_matched_version(crds: None) -> None:
    ok = ("object.spec.cronSpec != '' && object.spec.max__dash__size > 0 && "
          "object.spec.limits.web.cpu != '' && object.spec.free.anything == 1 && "
          "object.metadata.name != '' && object.kind == 'CronTab'")  # fmt: skip
    assert warnings(policy(ok, [GROUP], ["crontabs"])) == []
    found = warnings(policy("object.spec.cronSpecc == ''", [GROUP], ["crontabs"],
                            message="object.spec.limits.web.memory"))  # fmt: skip
    assert found == [
        {"fieldRef": "spec.validations[0].expression",
         "warning": f"{GROUP}/v1, Kind=CronTab: ERROR: <input>:1:12: undefined field "
                    "'cronSpecc'\n | object.spec.cronSpecc == ''\n | ...........^\n"},
        {"fieldRef": "spec.validations[0].messageExpression",
         "warning": f"{GROUP}/v1, Kind=CronTab: ERROR: <input>:1:23: undefined field "
                    "'memory'\n | object.spec.limits.web.memory\n | ......................^\n"},
    ]  # fmt: skip
    # v2 has schedule, not cronSpec
    v2 = warnings(policy("object.spec.cronSpec == ''", [GROUP], ["crontabs"], version="v2"))
    assert v2[0]["warning"].startswith(f"{GROUP}/v2, Kind=CronTab: ERROR: <input>:1:12: "
                                       "undefined field 'cronSpec'")  # fmt: skip
    assert warnings(policy("object.spec.schedule == ''", [GROUP], ["crontabs"], "v2")) == []


def test_params_by_param_kind(crds: None) -> None:
    limit = {"apiVersion": f"{GROUP}/v1", "kind": "ReplicaLimit"}
    rule = (["apps"], ["deployments"])
    assert warnings(policy("object.spec.replicas <= params.maxReplicas", *rule,
                           param=limit)) == []  # fmt: skip
    found = warnings(policy("object.spec.replicas <= params.maxReplica", *rule, param=limit))
    assert found[0]["warning"] == (
        "apps/v1, Kind=Deployment: ERROR: <input>:1:31: undefined field 'maxReplica'\n"
        " | object.spec.replicas <= params.maxReplica\n"
        f" | {'.' * 30}^\n")  # fmt: skip
    configmap = {"apiVersion": "v1", "kind": "ConfigMap"}
    assert warnings(policy("'x' in params.data", *rule, param=configmap)) == []
    found = warnings(policy("'x' in params.dat", *rule, param=configmap))
    assert "undefined field 'dat'" in found[0]["warning"]
    # a paramKind nobody serves: params are not judged
    gone = {"apiVersion": f"{GROUP}/v1", "kind": "Missing"}
    assert warnings(policy("params.anything > 1", *rule, param=gone)) == []
