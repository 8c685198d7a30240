"""Server-side dry run on every verb and subresource: dryRun from the query
and from DeleteOptions bodies (as kubectl sends it), every check run,
nothing stored, the answer Kubernetes gives; bad values refused (422)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.api.k8sproto import envelope
from tests.unit.controlplane.apiserver.rest.wire_harness import PROTOBUF, Api, serve

DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
PODS = "/api/v1/namespaces/default/pods"
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}},
       "spec": {"containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip


def deployment(name: str = "web", replicas: int = 2) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}  # fmt: skip


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with serve(tmp_path) as api:
        assert api.call("POST", DEPLOY, deployment()).status == 201
        assert api.call("POST", PODS, POD).status == 201
        yield api


def stored(api: Api, path: str) -> Any:
    answer = api.call("GET", path)
    return answer.json() if answer.status == 200 else answer.status


def test_create_is_checked_and_not_stored(api: Api) -> None:
    answer = api.call("POST", f"{DEPLOY}?dryRun=All", deployment("new"))
    assert answer.status == 201
    assert answer.json()["metadata"]["name"] == "new"
    assert stored(api, f"{DEPLOY}/new") == 404
    bad = deployment("bad", -1)
    assert api.call("POST", f"{DEPLOY}?dryRun=All", bad).status == 422  # validation ran


def test_update_and_every_patch_leave_the_object(api: Api) -> None:
    before = stored(api, f"{DEPLOY}/web")
    changed = json.loads(json.dumps(before))
    changed["spec"]["replicas"] = 7
    assert api.call("PUT", f"{DEPLOY}/web?dryRun=All", changed).json()["spec"]["replicas"] == 7
    patches: list[tuple[str, Any]] = [
        ("application/merge-patch+json", {"spec": {"replicas": 8}}),
        ("application/strategic-merge-patch+json", {"spec": {"replicas": 9}}),
        ("application/json-patch+json", [{"op": "replace", "path": "/spec/replicas", "value": 3}]),
    ]
    for media, patch in patches:
        answer = api.call("PATCH", f"{DEPLOY}/web?dryRun=All", patch, media)
        assert answer.status == 200, (media, answer.body)
    apply = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
             "spec": {"replicas": 4}}  # fmt: skip
    answer = api.call("PATCH", f"{DEPLOY}/web?dryRun=All&fieldManager=m&force=true",
                      json.dumps(apply).encode(), "application/apply-patch+yaml")  # fmt: skip
    assert answer.status == 200 and answer.json()["spec"]["replicas"] == 4
    created = api.call("PATCH", f"{DEPLOY}/other?dryRun=All&fieldManager=m",
                       json.dumps(deployment("other")).encode(), "application/apply-patch+yaml")  # fmt: skip
    assert created.status == 201
    assert stored(api, f"{DEPLOY}/other") == 404
    assert stored(api, f"{DEPLOY}/web") == before


def test_status_subresource(api: Api) -> None:
    before = stored(api, f"{DEPLOY}/web")
    patch = {"status": {"replicas": 5, "readyReplicas": 5}}
    answer = api.call("PATCH", f"{DEPLOY}/web/status?dryRun=All", patch,
                      "application/merge-patch+json")  # fmt: skip
    assert answer.status == 200 and answer.json()["status"]["readyReplicas"] == 5
    assert stored(api, f"{DEPLOY}/web") == before


def test_delete_with_dry_run_in_the_body_keeps_the_object(api: Api) -> None:
    # kubectl delete --dry-run=server sends it in DeleteOptions, not the query.
    options = {"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"],
               "propagationPolicy": "Background"}  # fmt: skip
    before = stored(api, f"{DEPLOY}/web")
    answer = api.call("DELETE", f"{DEPLOY}/web", options)
    assert answer.status == 200 and answer.json()["status"] == "Success"
    assert stored(api, f"{DEPLOY}/web") == before
    # the same DeleteOptions as protobuf (client-go's typed clients)
    pb = envelope.encode(options, "apps/v1", "DeleteOptions")
    assert api.call("DELETE", f"{DEPLOY}/web", pb, PROTOBUF).status == 200
    assert api.call("DELETE", f"{DEPLOY}/web?dryRun=All").status == 200
    assert stored(api, f"{DEPLOY}/web") == before
    answer = api.call("DELETE", DEPLOY, options)  # deletecollection
    assert answer.status == 200
    assert stored(api, f"{DEPLOY}/web") == before


def test_scale_with_dry_run_does_not_scale(api: Api) -> None:
    before = stored(api, f"{DEPLOY}/web")
    answer = api.call("PATCH", f"{DEPLOY}/web/scale?dryRun=All", {"spec": {"replicas": 5}},
                      "application/merge-patch+json")  # fmt: skip
    assert answer.status == 200 and answer.json()["spec"]["replicas"] == 5
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale",
             "metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": 6}}  # fmt: skip
    assert api.call("PUT", f"{DEPLOY}/web/scale?dryRun=All", scale).json()["spec"]["replicas"] == 6
    assert stored(api, f"{DEPLOY}/web") == before
    assert api.call("PATCH", f"{DEPLOY}/web/scale?dryRun=All", {"spec": {"replicas": -1}},
                    "application/merge-patch+json").status == 422  # fmt: skip


def test_pod_eviction_and_binding(api: Api) -> None:
    before = stored(api, f"{PODS}/p")
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"},
                "deleteOptions": {"dryRun": ["All"]}}  # fmt: skip
    assert api.call("POST", f"{PODS}/p/eviction", eviction).status == 201
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"kind": "Node", "name": "n1"}}  # fmt: skip
    assert api.call("POST", f"{PODS}/p/binding?dryRun=All", binding).status == 201
    assert stored(api, f"{PODS}/p") == before


@pytest.mark.parametrize(
    ("method", "path", "options"),
    [("POST", DEPLOY, "CreateOptions"), ("PUT", f"{DEPLOY}/web", "UpdateOptions"),
     ("PATCH", f"{DEPLOY}/web", "PatchOptions"), ("DELETE", f"{DEPLOY}/web", "DeleteOptions")],
)  # fmt: skip
def test_unsupported_values_are_refused_as_kubernetes_does(
    api: Api, method: str, path: str, options: str
) -> None:
    bodies: dict[str, Any] = {"POST": deployment("web"), "PUT": stored(api, path),
                              "PATCH": {"metadata": {}}, "DELETE": None}  # fmt: skip
    body = bodies[method]
    answer = api.call(method, f"{path}?dryRun=Yes", body, "application/merge-patch+json"
                      if method == "PATCH" else "application/json")  # fmt: skip
    assert answer.status == 422
    assert answer.json()["message"] == (
        f'{options}.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Yes"]: '
        'supported values: "All"'
    )
    assert api.call("DELETE", f"{DEPLOY}/web", {"dryRun": ["Nope"]}).status == 422
    assert stored(api, f"{DEPLOY}/web") != 404
