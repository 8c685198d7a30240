"""CRD validation rules in CEL (`x-kubernetes-validations`) through the real
API with kubectl 1.33: Kubernetes' documented examples (kubernetes.io,
"Validation rules" of the CustomResourceDefinition task page), each with an
allowed and a refused object; transition rules with oldSelf; reason,
fieldPath and messageExpression; the status subresource; and CRDs whose
rules do not compile or cost too much refused when written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controlplane.api import crd as crd_module
from tests.integration.rest.conftest import Cluster

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("need_kubectl")]

GROUP = "cel-test.skiff.dev"
PLURAL = "celwidgets"


def crd(props: dict[str, Any], rules: list[dict[str, Any]] | None = None, status: bool = False,
        plural: str = PLURAL, kind: str = "CelWidget") -> dict[str, Any]:  # fmt: skip
    spec: dict[str, Any] = {"type": "object", "properties": props}
    if rules:
        spec["x-kubernetes-validations"] = rules
    schema = {"type": "object", "properties": {"spec": spec, "status": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}  # fmt: skip
    version: dict[str, Any] = {"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": schema}}  # fmt: skip
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced", "versions": [version],
                 "names": {"plural": plural, "singular": plural[:-1], "kind": kind}},
    }  # fmt: skip


def apply(cluster: Cluster, obj: dict[str, Any], *extra: str) -> Any:
    return cluster.kubectl("apply", "-f", "-", *extra, input=json.dumps(obj), check=False)


def widget(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "CelWidget",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}  # fmt: skip


@pytest.fixture
def with_crd(cluster: Cluster) -> Iterator[Any]:
    made: list[str] = []

    def make(obj: dict[str, Any]) -> None:
        done = apply(cluster, obj)
        assert done.returncode == 0, done.stderr
        made.append(obj["metadata"]["name"])
        cluster.kubectl("wait", "--for=condition=Established", f"crd/{obj['metadata']['name']}")

    try:
        yield make
    finally:
        for name in made:
            cluster.kubectl("delete", "crd", name, "--wait=true", check=False)
            crd_module.unregister(name)


# (rule, schema of spec's properties, an allowed spec, a refused spec):
# the examples table of Kubernetes' "Validation rules" documentation.
DOCUMENTED = [
    ("self.minReplicas <= self.replicas",
     {"minReplicas": {"type": "integer"}, "replicas": {"type": "integer"}},
     {"minReplicas": 1, "replicas": 3}, {"minReplicas": 5, "replicas": 3}),
    ("'Available' in self.stateCounts",
     {"stateCounts": {"type": "object", "additionalProperties": {"type": "integer"}}},
     {"stateCounts": {"Available": 1}}, {"stateCounts": {"Pending": 1}}),
    ("(size(self.list1) == 0) != (size(self.list2) == 0)",
     {"list1": {"type": "array", "items": {"type": "string"}},
      "list2": {"type": "array", "items": {"type": "string"}}},
     {"list1": ["a"], "list2": []}, {"list1": ["a"], "list2": ["b"]}),
    ("!('MY_KEY' in self.map1) || self['map1']['MY_KEY'].matches('^[a-zA-Z]*$')",
     {"map1": {"type": "object", "additionalProperties": {"type": "string"}}},
     {"map1": {"MY_KEY": "abc"}}, {"map1": {"MY_KEY": "a1"}}),
    ("self.envars.filter(e, e.name == 'MY_ENV').all(e, e.value.matches('^[a-zA-Z]*$'))",
     {"envars": {"type": "array", "items": {"type": "object", "properties": {
         "name": {"type": "string"}, "value": {"type": "string"}}}}},
     {"envars": [{"name": "MY_ENV", "value": "abc"}]},
     {"envars": [{"name": "MY_ENV", "value": "a-1"}]}),
    ("self.health.startsWith('ok')", {"health": {"type": "string"}},
     {"health": "ok-now"}, {"health": "bad"}),
    ("self.widgets.exists(w, w.key == 'x' && w.foo < 10)",
     {"widgets": {"type": "array", "items": {"type": "object", "properties": {
         "key": {"type": "string"}, "foo": {"type": "integer"}}}}},
     {"widgets": [{"key": "x", "foo": 3}]}, {"widgets": [{"key": "x", "foo": 30}]}),
    ("type(self.value) == string ? self.value == '100%' : self.value == 1000",
     {"value": {"x-kubernetes-int-or-string": True}},
     {"value": "100%"}, {"value": 999}),
    # two unbounded lists nested would cost too much: the bounds the docs advise
    ("self.set1.all(e, !(e in self.set2))",
     {"set1": {"type": "array", "items": {"type": "string"}, "maxItems": 100},
      "set2": {"type": "array", "items": {"type": "string"}, "maxItems": 100}},
     {"set1": ["a"], "set2": ["b"]}, {"set1": ["a"], "set2": ["a"]}),
    ("size(self.names) == size(self.details) && self.names.all(n, n in self.details)",
     {"names": {"type": "array", "items": {"type": "string"}},
      "details": {"type": "object", "additionalProperties": {"type": "string"}}},
     {"names": ["a"], "details": {"a": "x"}}, {"names": ["a"], "details": {"b": "x"}}),
    ("size(self.clusters.filter(c, c.name == self.primary)) == 1",
     {"primary": {"type": "string"}, "clusters": {"type": "array", "items": {
         "type": "object", "properties": {"name": {"type": "string"}}}}},
     {"primary": "a", "clusters": [{"name": "a"}]}, {"primary": "a", "clusters": [{"name": "b"}]}),
    ("quantity(self.memory).isLessThan(quantity('1Gi'))", {"memory": {"type": "string"}},
     {"memory": "512Mi"}, {"memory": "2Gi"}),
    ("url(self.endpoint).getScheme() == 'https'", {"endpoint": {"type": "string"}},
     {"endpoint": "https://example.com/x"}, {"endpoint": "http://example.com/x"}),
    ("cidr('10.0.0.0/8').containsIP(self.address)", {"address": {"type": "string"}},
     {"address": "10.1.2.3"}, {"address": "192.168.0.1"}),
]  # fmt: skip


@pytest.mark.parametrize(("rule", "props", "allowed", "refused"), DOCUMENTED,
                         ids=[d[0][:40] for d in DOCUMENTED])  # fmt: skip
def test_documented_rules_allow_and_refuse(
    cluster: Cluster, with_crd: Any, rule: str, props: dict[str, Any],
    allowed: dict[str, Any], refused: dict[str, Any],
) -> None:  # fmt: skip
    with_crd(crd(props, [{"rule": rule}]))
    ok = apply(cluster, widget("ok", allowed))
    assert ok.returncode == 0, ok.stderr
    bad = apply(cluster, widget("bad", refused))
    assert bad.returncode != 0
    assert (f'The CelWidget "bad" is invalid: spec: Invalid value: "object": '
            f"failed rule: {rule}") in bad.stderr  # fmt: skip
    cluster.kubectl("delete", "celwidget", "ok", check=False)


def test_message_reason_field_path_and_message_expression(cluster: Cluster, with_crd: Any) -> None:
    props = {"x": {"type": "integer"}, "maxLimit": {"type": "integer"}}
    with_crd(crd(props, [
        {"rule": "self.x <= self.maxLimit", "message": "x must not exceed maxLimit"},
        {"rule": "self.x <= self.maxLimit", "reason": "FieldValueForbidden", "fieldPath": ".x",
         "messageExpression": "'x exceeded max limit of ' + string(self.maxLimit)"},
    ]))  # fmt: skip
    done = apply(cluster, widget("w", {"x": 20, "maxLimit": 10}))
    assert done.returncode != 0
    assert (
        'The CelWidget "w" is invalid: \n* spec: Invalid value: "object": x must not exceed '
        "maxLimit\n* spec.x: Forbidden: x exceeded max limit of 10\n"
    ) in done.stderr
    assert apply(cluster, widget("w", {"x": 5, "maxLimit": 10})).returncode == 0
    cluster.kubectl("delete", "celwidget", "w")


def test_transition_rules_only_on_update(cluster: Cluster, with_crd: Any) -> None:
    props = {"name": {"type": "string", "x-kubernetes-validations": [
        {"rule": "self == oldSelf", "message": "Value is immutable"}]},
        "size": {"type": "integer", "x-kubernetes-validations": [
            {"rule": "self >= oldSelf", "message": "size may not shrink"}]}}  # fmt: skip
    with_crd(crd(props))
    assert apply(cluster, widget("t", {"name": "a", "size": 3})).returncode == 0  # no oldSelf
    done = apply(cluster, widget("t", {"name": "b", "size": 2}))
    assert done.returncode != 0
    assert (
        '* spec.name: Invalid value: "string": Value is immutable\n'
        '* spec.size: Invalid value: "integer": size may not shrink\n'
    ) in done.stderr
    assert apply(cluster, widget("t", {"name": "a", "size": 4})).returncode == 0
    cluster.kubectl("delete", "celwidget", "t")


def test_status_subresource_rules(cluster: Cluster, with_crd: Any, tmp_path: Path) -> None:
    obj = crd({"replicas": {"type": "integer"}}, status=True)
    obj["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"] = {
        "type": "object", "properties": {"ready": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.ready >= 0", "message": "ready must be >= 0"}],
    }  # fmt: skip
    with_crd(obj)
    assert apply(cluster, widget("s", {"replicas": 1})).returncode == 0
    patch = cluster.kubectl("patch", "celwidget", "s", "--subresource=status", "--type=merge",
                            "-p", '{"status": {"ready": -1}}', check=False)  # fmt: skip
    assert patch.returncode != 0
    assert 'status: Invalid value: "object": ready must be >= 0' in patch.stderr
    cluster.kubectl("patch", "celwidget", "s", "--subresource=status", "--type=merge",
                    "-p", '{"status": {"ready": 1}}')  # fmt: skip
    cluster.kubectl("delete", "celwidget", "s")


def test_rule_that_does_not_compile_is_refused_with_position(cluster: Cluster) -> None:
    obj = crd({"replicas": {"type": "integer"}}, [{"rule": "self.replicas >"}],
              plural="badrules", kind="BadRule")  # fmt: skip
    done = apply(cluster, obj)
    assert done.returncode != 0
    assert (
        'The CustomResourceDefinition "badrules.cel-test.skiff.dev" is invalid: '
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: "
        'Invalid value: apiextensions.ValidationRule{Rule:"self.replicas >"'
    ) in done.stderr
    assert "compilation failed: ERROR: <input>:1:16: Syntax error:" in done.stderr
    assert cluster.kubectl("get", "crd", "badrules.cel-test.skiff.dev", check=False).returncode != 0


def test_rule_over_the_cost_budget_is_refused_until_bounded(
    cluster: Cluster, with_crd: Any
) -> None:
    rule = {"rule": "self.items.all(x, self.items.all(y, x == y || x != y))"}
    props: dict[str, Any] = {"items": {"type": "array", "items": {"type": "string"}}}
    done = apply(cluster, crd(props, [rule]))
    assert done.returncode != 0
    assert (
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: "
        "Forbidden: estimated rule cost exceeds budget by factor of"
    ) in done.stderr
    assert "adding maxItems, maxProperties, and maxLength" in done.stderr
    props["items"]["maxItems"] = 100
    with_crd(crd(props, [rule]))
    assert apply(cluster, widget("c", {"items": ["a", "b"]})).returncode == 0
    cluster.kubectl("delete", "celwidget", "c")


def test_python_client_gets_422_with_causes(cluster: Cluster, with_crd: Any) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    with_crd(crd({"replicas": {"type": "integer"}},
                 [{"rule": "self.replicas < 10", "message": "too many"}]))  # fmt: skip
    api = kubernetes.client.CustomObjectsApi(
        kubernetes.config.new_client_from_config(str(cluster.kubeconfig)))  # fmt: skip
    with pytest.raises(kubernetes.client.ApiException) as err:
        api.create_namespaced_custom_object(GROUP, "v1", "default", PLURAL,
                                            widget("p", {"replicas": 11}))  # fmt: skip
    assert err.value.status == 422
    body = yaml.safe_load(err.value.body)
    assert body["reason"] == "Invalid"
    assert (
        body["message"]
        == 'CelWidget.cel-test.skiff.dev "p" is invalid: spec: Invalid value: "object": too many'
    )
