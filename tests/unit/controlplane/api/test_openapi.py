"""OpenAPI documents built from the one schema table: every kind defined with
its group/version/kind, the facts kubectl reads (fieldValidation on PATCH,
patch merge keys), every example manifest valid, custom kinds included."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controlplane.api import crd, kinds, openapi
from controlplane.client.errors import NotFound
from tests.fakes.crds import widget_crd

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"


def gvks(doc: dict[str, Any], where: str) -> set[tuple[str, str, str]]:
    return {
        (g["group"], g["version"], g["kind"])
        for d in doc[where].values()
        for g in d.get("x-kubernetes-group-version-kind", [])
    }


def test_v2_defines_every_builtin_kind() -> None:
    doc = openapi.v2()
    assert doc["swagger"] == "2.0"
    defined = gvks(doc, "definitions")
    for info in kinds.builtin_kinds():
        assert (info.group, info.version, info.kind) in defined, info.key
    assert ("events.k8s.io", "v1", "Event") in defined
    json.dumps(doc)  # plain JSON


def test_v3_index_and_documents() -> None:
    index = openapi.v3_paths()["paths"]
    assert "api/v1" in index and "apis/apps/v1" in index and "apis/events.k8s.io/v1" in index
    assert index["apis/apps/v1"]["serverRelativeURL"].startswith("/openapi/v3/apis/apps/v1?hash=")
    doc = openapi.v3("apps", "v1")
    assert doc["openapi"].startswith("3.")
    assert ("apps", "v1", "Deployment") in gvks(doc["components"], "schemas")
    assert ("", "v1", "Pod") not in gvks(doc["components"], "schemas")
    with pytest.raises(NotFound, match=r"apis/nope\.example\.com/v1"):
        openapi.v3("nope.example.com", "v1")


def test_patch_operations_declare_field_validation() -> None:
    # kubectl sends fieldValidation=Strict (and skips client-side validation)
    # when the PATCH operation of the kind lists that query parameter.
    doc = openapi.v3("apps", "v1")
    op = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert op["x-kubernetes-group-version-kind"] == {
        "group": "apps",
        "version": "v1",
        "kind": "Deployment",
    }
    assert {"fieldValidation", "fieldManager", "force", "dryRun"} <= {
        p["name"] for p in op["parameters"] if p["in"] == "query"
    }
    core = openapi.v3("", "v1")
    assert "/api/v1/nodes/{name}" in core["paths"] and "/api/v1/pods" in core["paths"]
    assert "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale" in doc["paths"]


def test_merge_facts_come_from_patch_meta() -> None:
    schemas = openapi.v3("", "v1")["components"]["schemas"]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    ports = schemas["io.k8s.api.core.v1.Container"]["properties"]["ports"]
    assert ports["x-kubernetes-patch-merge-key"] == "containerPort"
    finalizers = schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"][
        "finalizers"
    ]
    assert finalizers["x-kubernetes-list-type"] == "set"
    assert (
        "x-kubernetes-patch-merge-key"
        not in schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["tolerations"]
    )


def test_refs_resolve() -> None:
    for doc, prefix, where in (
        (openapi.v2(), "#/definitions/", "definitions"),
        (openapi.v3("batch", "v1"), "#/components/schemas/", "components"),
    ):
        text = json.dumps(doc)
        names = doc["definitions"] if where == "definitions" else doc["components"]["schemas"]
        for ref in {part.split('"')[0] for part in text.split('"$ref": "')[1:]}:
            assert ref.startswith(prefix) and ref[len(prefix) :] in names, ref


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_manifest_validates(path: Path) -> None:
    for obj in yaml.safe_load_all(path.read_text()):
        if obj:
            assert openapi.validate(obj) == [], obj["kind"]


@pytest.mark.parametrize(
    ("obj", "problem"),
    [
        (
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "spec": {"containers": [{"name": "a", "imagee": "x"}]},
            },
            'unknown field "spec.containers[0].imagee"',
        ),
        (
            {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": "3"}},
            "spec.replicas: expected integer, got string",
        ),
        (
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": 1}}},
            "metadata.labels.a: expected string, got integer",
        ),
        (
            {
                "apiVersion": "v1",
                "kind": "Service",
                "spec": {"ports": [{"port": 80, "targetPort": [1]}]},
            },
            "spec.ports[0].targetPort: expected string or integer, got array",
        ),
        ({"apiVersion": "v1", "kind": "ConfigMap", "dat": {}}, 'unknown field "dat"'),
    ],
)
def test_validate_names_the_field(obj: dict[str, Any], problem: str) -> None:
    assert problem in openapi.validate(obj)


def test_validate_accepts_quantities_and_free_objects() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "spec": {
            "containers": [{"name": "a", "resources": {"limits": {"cpu": 1, "memory": "1Gi"}}}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }  # fmt: skip
    assert openapi.validate(pod) == []
    assert openapi.validate({"apiVersion": "example.com/v1", "kind": "Widget", "x": 1}) == []


def test_validate_reaches_the_fields_the_schema_leaves_free() -> None:
    """Below a field the kinds' schema declares `object`, Kubernetes' message
    of it names the fields, as kube-apiserver's strict validation does."""
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "spec": {"strategy": {"rollingUpdate": {"maxSurge": 1, "bogus": 1}}},
    }
    assert openapi.validate(deployment) == ['unknown field "spec.strategy.rollingUpdate.bogus"']
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "spec": {
            "containers": [{"name": "a", "livenessProbe": {"httpGet": {"port": 80, "x": 1}}}],
            "volumes": [{"name": "v", "hostPath": {"path": "/d", "y": 2}}],
            "affinity": {"nodeAffinity": {"anything": [1, 2]}},
        },
        "status": {"conditions": [{"type": "Ready", "whatever": True}]},
    }
    assert openapi.validate(pod) == [
        'unknown field "spec.containers[0].livenessProbe.httpGet.x"',
        'unknown field "spec.volumes[0].hostPath.y"',
        'unknown field "spec.affinity.nodeAffinity.anything"',
        'unknown field "status.conditions[0].whatever"',
    ]


@pytest.fixture
def widgets() -> Iterator[None]:
    crd.register(widget_crd())
    try:
        yield
    finally:
        crd.unregister("widgets.example.com")


def test_custom_kinds_are_included(widgets: None) -> None:
    assert ("example.com", "v1", "Widget") in gvks(openapi.v2(), "definitions")
    assert "apis/example.com/v1beta1" in openapi.v3_paths()["paths"]
    doc = openapi.v3("example.com", "v1")
    schema = doc["components"]["schemas"]["com.example.v1.Widget"]
    assert schema["properties"]["spec"]["properties"]["size"]["type"] == "integer"
    assert "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/scale" in doc["paths"]


def test_documents_follow_crd_changes(widgets: None) -> None:
    assert "apis/example.com/v1" in openapi.v3_paths()["paths"]
    crd.unregister("widgets.example.com")
    assert "apis/example.com/v1" not in openapi.v3_paths()["paths"]
    crd.register(widget_crd())


def test_custom_kind_schemas_carry_the_standard_fields(widgets: None) -> None:
    doc = openapi.v3("example.com", "v1")
    props = doc["components"]["schemas"]["com.example.v1.Widget"]["properties"]
    assert (
        props["metadata"]["$ref"]
        == "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    )
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in doc["components"]["schemas"]


def test_v2_protobuf_wire_form() -> None:
    from controlplane.api import openapi_pb

    empty = {
        "swagger": "2.0",
        "info": {"title": "t", "version": "v"},
        "paths": {},
        "definitions": {},
    }
    assert openapi_pb.encode_v2(empty) == b"\n\x032.0\x12\x06\n\x01t\x12\x01vB\x00J\x00"
    one = {"definitions": {"X": {"type": "integer", "maximum": 1.5, "x-a": [1]}}}
    data = openapi_pb.encode_v2(one)
    assert b"\xb2\x01\t\n\x07integer" in data  # type (22) -> TypeItem.value
    assert b"9\x00\x00\x00\x00\x00\x00\xf8?" in data  # maximum (7) as a double
    assert b"x-a" in data and b"- 1\n" in data  # vendor extension as YAML
    assert openapi.v2_protobuf().startswith(b"\n\x032.0")


def test_a_kind_without_a_schema_still_has_paths_and_an_open_definition() -> None:
    # kubectl looks for fieldValidation on the PATCH operation of each kind.
    extra = kinds.KindInfo("Gadget", "gadgets.skiff.dev/v1", "gadgets", "gadget")
    kinds.register(extra)
    try:
        doc = openapi.v3("gadgets.skiff.dev", "v1")
        op = doc["paths"]["/apis/gadgets.skiff.dev/v1/namespaces/{namespace}/gadgets/{name}"][
            "patch"
        ]
        assert "fieldValidation" in {p["name"] for p in op["parameters"]}
        body = doc["components"]["schemas"]["dev.skiff.gadgets.v1.Gadget"]
        assert body["x-kubernetes-preserve-unknown-fields"] is True
        assert "properties" not in openapi.v2()["definitions"]["dev.skiff.gadgets.v1.Gadget"]
    finally:
        kinds.unregister(extra.key)


def test_every_served_kind_has_a_patch_operation() -> None:
    for info in kinds.all_kinds():
        doc = openapi.v3(info.group, info.version)
        found = [
            op["patch"]["x-kubernetes-group-version-kind"]
            for op in doc["paths"].values()
            if "patch" in op
        ]
        assert {"group": info.group, "version": info.version, "kind": info.kind} in found, info.key
