"""Unknown fields at any depth of a built-in kind never reach storage, as
kube-apiserver decodes into Go structs: Warn (the default) stores the
object without them and names each in a Warning header, Ignore drops them
silently, Strict refuses with 400. Below the structures skiff's schema
leaves free-form (a strategy, a probe's handler, an affinity, status) too,
for creates, updates, every patch type and apply; the fields Kubernetes'
types have at those depths are kept."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.rest_wire import Answer, Api, serve

DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
UNKNOWN = [
    "spec.strategy.rollingUpdate.bogus",
    "spec.template.spec.affinity.nodeAffinity.made",
    "spec.template.spec.containers[0].livenessProbe.httpGet.nope",
]


def deployment(name: str, resource_version: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"app": name}}
    if resource_version:
        meta["resourceVersion"] = resource_version
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxSurge": 2, "bogus": 1}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "affinity": {"nodeAffinity": {"made": "up", "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [
                            {"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
                    "containers": [{
                        "name": "c", "image": "busybox",
                        "livenessProbe": {"httpGet": {"port": 8080, "path": "/healthz", "nope": 1}},
                    }],
                },
            },
        },
    }  # fmt: skip


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with serve(tmp_path) as api:
        yield api


def warned(answer: Answer) -> list[str]:
    return [
        w.removeprefix('299 - "').removesuffix('"').replace('\\"', '"') for w in answer.warnings
    ]


def assert_stored_without_them(api: Api, name: str) -> None:
    """The unknown fields are gone; the known ones beside them are not."""
    stored = api.call("GET", f"{DEPLOY}/{name}").json()
    spec = stored["spec"]
    assert spec["strategy"]["rollingUpdate"] == {"maxSurge": 2, "maxUnavailable": "25%"}
    pod = spec["template"]["spec"]
    assert pod["affinity"] == {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a"]}]}]}}}  # fmt: skip
    handler = pod["containers"][0]["livenessProbe"]["httpGet"]
    assert handler["port"] == 8080 and handler["path"] == "/healthz" and "nope" not in handler


@pytest.mark.parametrize("query", ["?fieldValidation=Warn", ""])
def test_warn_stores_the_object_without_them_naming_each(api: Api, query: str) -> None:
    answer = api.call("POST", f"{DEPLOY}{query}", deployment("warned"))
    assert answer.status == 201, answer.body
    assert warned(answer) == [f'unknown field "{path}"' for path in UNKNOWN]
    assert "bogus" not in json.dumps(answer.json())
    assert_stored_without_them(api, "warned")


def test_ignore_drops_them_silently(api: Api) -> None:
    answer = api.call("POST", f"{DEPLOY}?fieldValidation=Ignore", deployment("quiet"))
    assert answer.status == 201 and answer.warnings == []
    assert_stored_without_them(api, "quiet")


def test_strict_refuses_naming_them(api: Api) -> None:
    answer = api.call("POST", f"{DEPLOY}?fieldValidation=Strict", deployment("strict"))
    assert answer.status == 400, answer.body
    assert answer.json()["message"] == "strict decoding error: " + ", ".join(
        f'unknown field "{path}"' for path in UNKNOWN
    )
    assert api.call("GET", f"{DEPLOY}/strict").status == 404


def test_an_update_drops_them(api: Api) -> None:
    assert api.call("POST", DEPLOY, deployment("put")).status == 201
    rv = api.call("GET", f"{DEPLOY}/put").json()["metadata"]["resourceVersion"]
    answer = api.call("PUT", f"{DEPLOY}/put?fieldValidation=Ignore", deployment("put", rv))
    assert answer.status == 200, answer.body
    assert_stored_without_them(api, "put")


PATCHES: dict[str, dict[str, Any] | list[Any]] = {
    "application/merge-patch+json": {"spec": {"strategy": {"rollingUpdate": {"late": 1}}}},
    "application/strategic-merge-patch+json": {
        "spec": {"strategy": {"rollingUpdate": {"late": 1}}}
    },
    "application/json-patch+json": [
        {"op": "add", "path": "/spec/strategy/rollingUpdate/late", "value": 1}
    ],
}


@pytest.mark.parametrize("media", list(PATCHES))
def test_a_patched_object_is_pruned(api: Api, media: str) -> None:
    assert api.call("POST", DEPLOY, deployment("patched")).status == 201
    answer = api.call("PATCH", f"{DEPLOY}/patched", PATCHES[media], media)
    assert answer.status == 200, answer.body
    assert warned(answer) == ['unknown field "spec.strategy.rollingUpdate.late"']
    assert_stored_without_them(api, "patched")
    stored = api.call("GET", f"{DEPLOY}/patched").json()
    assert "late" not in stored["spec"]["strategy"]["rollingUpdate"]


def test_an_apply_is_pruned(api: Api) -> None:
    url = f"{DEPLOY}/applied?fieldManager=test"
    body = json.dumps(deployment("applied")).encode()
    answer = api.call("PATCH", url, body, "application/apply-patch+yaml")
    assert answer.status == 201, answer.body
    assert warned(answer) == [f'unknown field "{path}"' for path in UNKNOWN]
    assert_stored_without_them(api, "applied")
    entry = api.call("GET", f"{DEPLOY}/applied").json()["metadata"]["managedFields"][0]
    rolling = entry["fieldsV1"]["f:spec"]["f:strategy"]["f:rollingUpdate"]
    assert "f:bogus" not in rolling and "f:maxSurge" in rolling
