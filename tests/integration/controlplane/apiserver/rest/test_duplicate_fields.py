"""Repeated keys in request bodies, as kube-apiserver's strict decoding reports
them (test/integration/apiserver/field_validation_test.go's cases): Strict
refuses with every problem in one 400 and stores nothing, Warn (the default)
stores the object with a Warning header each, Ignore says nothing. JSON
bodies name the path; YAML ones go-yaml's line; a patch's repeats come before
the patched object's unknown fields; an apply's alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.rest_wire import Api, serve

DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
CMS = "/api/v1/namespaces/default/configmaps"
YAML = "application/yaml"

BODY = """{"apiVersion": "apps/v1", "kind": "Deployment",
 "metadata": {"name": "dupename", "name": "NAME", "labels": {"app": "web"}, "unknownMeta": "x"},
 "spec": {"unknown1": "v", "unknownDupe": "a", "unknownDupe": "b", "paused": true, "paused": false,
  "selector": {"matchLabels": {"app": "web"}},
  "template": {"metadata": {"labels": {"app": "web"}},
   "spec": {"containers": [{"name": "c", "image": "busybox", "unknownNested": "v",
                            "imagePullPolicy": "Always", "imagePullPolicy": "Never"}]}}}}"""
PROBLEMS = [
    'duplicate field "metadata.name"',
    'unknown field "metadata.unknownMeta"',
    'unknown field "spec.unknown1"',
    'unknown field "spec.unknownDupe"',
    'duplicate field "spec.paused"',
    # a repeated unknown field is reported as unknown only (a typed decode)
    'unknown field "spec.template.spec.containers[0].unknownNested"',
    'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
]
YAML_BODY = """apiVersion: v1
kind: ConfigMap
metadata:
  name: dupename
  name: NAME
data:
  a: "1"
  b: "2"
  a: "3"
"""


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with serve(tmp_path) as api:
        yield api


def body(name: str, text: str = BODY) -> bytes:
    return text.replace("NAME", name).encode()


def test_strict_refuses_naming_every_problem_in_order_and_stores_nothing(api: Api) -> None:
    answer = api.call("POST", f"{DEPLOY}?fieldValidation=Strict", body("strict"))
    assert answer.status == 400, answer.body
    status = answer.json()
    assert status["reason"] == "BadRequest"
    assert status["message"] == "strict decoding error: " + ", ".join(PROBLEMS)
    assert api.call("GET", f"{DEPLOY}/strict").status == 404
    assert api.call("GET", f"{DEPLOY}/dupename").status == 404


@pytest.mark.parametrize("query", ["?fieldValidation=Warn", ""])
def test_warn_stores_the_last_value_with_a_warning_each(api: Api, query: str) -> None:
    answer = api.call("POST", f"{DEPLOY}{query}", body("warned"))
    assert answer.status == 201, answer.body
    texts = [
        w.removeprefix('299 - "').removesuffix('"').replace('\\"', '"') for w in answer.warnings
    ]
    assert texts == PROBLEMS
    stored = api.call("GET", f"{DEPLOY}/warned").json()
    assert stored["spec"]["paused"] is False
    assert stored["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Never"


def test_ignore_says_nothing(api: Api) -> None:
    answer = api.call("POST", f"{DEPLOY}?fieldValidation=Ignore", body("quiet"))
    assert answer.status == 201 and answer.warnings == []


def test_an_update_is_checked_too(api: Api) -> None:
    good = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u"},"data":{"a":"1"}}'
    assert api.call("POST", CMS, good.encode()).status == 201
    rv = api.call("GET", f"{CMS}/u").json()["metadata"]["resourceVersion"]
    dup = (f'{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"u",'
           f'"resourceVersion":"{rv}"}},"data":{{"a":"2","a":"3"}}}}')  # fmt: skip
    answer = api.call("PUT", f"{CMS}/u?fieldValidation=Strict", dup.encode())
    assert answer.status == 400
    assert answer.json()["message"] == 'strict decoding error: duplicate field "data.a"'
    assert api.call("GET", f"{CMS}/u").json()["data"] == {"a": "1"}


def test_yaml_bodies_name_go_yamls_lines(api: Api) -> None:
    answer = api.call("POST", f"{CMS}?fieldValidation=Strict", body("y", YAML_BODY), YAML)
    assert answer.status == 400
    assert answer.json()["message"] == (
        "strict decoding error: yaml: unmarshal errors:\n"
        '  line 5: key "name" already set in map\n'
        '  line 9: key "a" already set in map'
    )
    answer = api.call("POST", CMS, body("y", YAML_BODY), YAML)
    assert answer.status == 201
    assert answer.warnings == ['299 - "line 5: key \\"name\\" already set in map"',
                               '299 - "line 9: key \\"a\\" already set in map"']  # fmt: skip
    assert api.call("GET", f"{CMS}/y").json()["data"] == {"a": "3", "b": "2"}


def test_a_patchs_repeats_come_first(api: Api) -> None:
    created = api.call("POST", f"{DEPLOY}?fieldValidation=Ignore", body("p"))
    assert created.status == 201
    merge = b'{"spec": {"unknown1": "v", "paused": true, "paused": false}}'
    for media in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
        answer = api.call("PATCH", f"{DEPLOY}/p?fieldValidation=Strict", merge, media)
        assert answer.status == 400, answer.body
        assert answer.json()["message"] == (
            'strict decoding error: duplicate field "spec.paused", unknown field "spec.unknown1"'
        )
    ops = b'[{"op": "replace", "path": "/spec/paused", "path": "/spec/replicas", "value": 0}]'
    answer = api.call("PATCH", f"{DEPLOY}/p?fieldValidation=Strict", ops,
                      "application/json-patch+json")  # fmt: skip
    assert answer.status == 400, answer.body
    assert (
        answer.json()["message"] == 'strict decoding error: json patch duplicate field "[0].path"'
    )
    answer = api.call("PATCH", f"{DEPLOY}/p", b'{"spec":{"paused":true,"paused":true}}',
                      "application/merge-patch+json")  # fmt: skip
    assert answer.status == 200 and answer.warnings == ['299 - "duplicate field \\"spec.paused\\""']


def test_an_apply_refuses_with_its_own_words(api: Api) -> None:
    apply = (
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ssa"},"data":{"a":"1","a":"2"}}'
    )
    url = f"{CMS}/ssa?fieldManager=test&fieldValidation=Strict"
    answer = api.call("PATCH", url, apply, "application/apply-patch+yaml")
    assert answer.status == 400
    assert answer.json()["message"] == (
        "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n"
        '  line 1: key "a" already set in map'
    )
    assert api.call("GET", f"{CMS}/ssa").status == 404
    answer = api.call("PATCH", url.replace("Strict", "Warn"), apply, "application/apply-patch+yaml")
    assert answer.status == 201
    assert answer.warnings == ['299 - "line 1: key \\"a\\" already set in map"']


def test_a_custom_resources_repeats_come_before_its_unknown_fields(api: Api) -> None:
    # Decoded as a map (every repeat found), then pruned against the schema.
    from controlplane.api import crd
    from tests.fakes.crds import widget_crd

    made = widget_crd()
    crd.register(made)
    try:
        widgets = "/apis/example.com/v1/namespaces/default/widgets"
        text = (b'{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},'
                b'"spec":{"size":1,"bogus":1,"bogus":2,"size":2}}')  # fmt: skip
        answer = api.call("POST", f"{widgets}?fieldValidation=Strict", text)
        assert answer.status == 400, answer.body
        assert answer.json()["message"] == (
            'strict decoding error: duplicate field "spec.bogus", duplicate field "spec.size", '
            'unknown field "spec.bogus"'
        )
        assert api.call("GET", f"{widgets}/w").status == 404
    finally:
        crd.unregister(made["metadata"]["name"])
