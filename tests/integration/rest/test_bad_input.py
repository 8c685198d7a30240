"""Bad input over raw HTTPS: the right Status, and nothing stored."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.integration.rest.conftest import Cluster

pytestmark = pytest.mark.slow


def call(
    cluster: Cluster, method: str, path: str, body: bytes | None = None,
    content_type: str = "application/json", token: str | None = None,
) -> tuple[int, dict[str, Any], dict[str, str]]:  # fmt: skip
    context = ssl.create_default_context(cadata=cluster.running.admin.ca_pem.decode())
    context.check_hostname = False
    headers = {"Content-Type": content_type}
    headers["Authorization"] = f"Bearer {cluster.running.admin.token if token is None else token}"
    request = urllib.request.Request(cluster.url + path, body, headers, method=method)
    try:
        with urllib.request.urlopen(request, context=context) as response:
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read()), dict(err.headers)


PODS = "/api/v1/namespaces/default/pods"


def assert_not_stored(cluster: Cluster, name: str) -> None:
    code, status, _ = call(cluster, "GET", f"{PODS}/{name}")
    assert code == 404 and status["reason"] == "NotFound"


def test_malformed_json_is_400_with_the_position(cluster: Cluster) -> None:
    code, status, _ = call(cluster, "POST", PODS, b'{"metadata": {"name": "x",}}')
    assert code == 400 and status["reason"] == "BadRequest"
    assert "line 1, column" in status["message"]
    assert_not_stored(cluster, "x")


def test_malformed_yaml_is_400_with_the_position(cluster: Cluster) -> None:
    code, status, _ = call(cluster, "POST", PODS, b"metadata:\n  name: [x\n", "application/yaml")
    assert code == 400 and "line" in status["message"]


def test_unknown_group_version_and_kind_are_404_naming_them(cluster: Cluster) -> None:
    code, status, _ = call(cluster, "GET", "/apis/nothing.example/v1/things")
    assert code == 404 and "nothing.example/v1" in status["message"]
    code, status, _ = call(cluster, "GET", "/api/v1/widgets")
    assert code == 404 and "widgets" in status["message"]


def test_invalid_object_is_422_with_every_cause(cluster: Cluster) -> None:
    pod = {"metadata": {"name": "bad"}, "spec": {"containers": [{"name": "c"}],
                                                   "restartPolicy": "Sometimes"}}  # fmt: skip
    code, status, _ = call(cluster, "POST", PODS, json.dumps(pod).encode())
    assert code == 422 and status["reason"] == "Invalid"
    fields = {c["field"] for c in status["details"]["causes"]}
    assert {"spec.containers[0].image", "spec.restartPolicy"} <= fields
    assert_not_stored(cluster, "bad")


def test_oversized_body_is_413(cluster: Cluster) -> None:
    big = {"metadata": {"name": "huge"}, "data": {"x": "a" * (3 * 1024 * 1024 + 10)}}
    code, status, _ = call(
        cluster, "POST", "/api/v1/namespaces/default/configmaps", json.dumps(big).encode()
    )
    assert code == 413 and status["reason"] == "RequestEntityTooLarge"
    code, _, _ = call(cluster, "GET", "/api/v1/namespaces/default/configmaps/huge")
    assert code == 404


def test_deeply_nested_body_is_refused(cluster: Cluster) -> None:
    doc: Any = "x"
    for _ in range(150):
        doc = {"a": doc}
    body = {"metadata": {"name": "deep"}, "spec": doc}
    code, _, _ = call(cluster, "POST", PODS, json.dumps(body).encode())
    assert code in (413, 422)
    assert_not_stored(cluster, "deep")


def test_conflicts_and_already_exists_are_409(cluster: Cluster) -> None:
    cm = {"metadata": {"name": "twice"}, "data": {"a": "1"}}
    path = "/api/v1/namespaces/default/configmaps"
    assert call(cluster, "POST", path, json.dumps(cm).encode())[0] == 201
    code, status, _ = call(cluster, "POST", path, json.dumps(cm).encode())
    assert code == 409 and status["reason"] == "AlreadyExists"
    stale = {**cm, "metadata": {"name": "twice", "resourceVersion": "1"}}
    code, status, _ = call(cluster, "PUT", f"{path}/twice", json.dumps(stale).encode())
    assert code == 409 and status["reason"] == "Conflict"


def test_dry_run_stores_nothing(cluster: Cluster) -> None:
    cm = {"metadata": {"name": "dry"}, "data": {"a": "1"}}
    path = "/api/v1/namespaces/default/configmaps"
    code, obj, _ = call(cluster, "POST", f"{path}?dryRun=All", json.dumps(cm).encode())
    assert code == 201 and obj["metadata"]["name"] == "dry"
    assert call(cluster, "GET", f"{path}/dry")[0] == 404


def test_bad_token_is_401_and_watch_too_old_is_410(cluster: Cluster) -> None:
    code, status, _ = call(cluster, "GET", PODS, token="nope")
    assert code == 401 and status["reason"] == "Unauthorized"
    context = ssl.create_default_context(cadata=cluster.running.admin.ca_pem.decode())
    context.check_hostname = False
    cluster.running.store.compact(cluster.running.store.current_revision())
    request = urllib.request.Request(
        cluster.url + PODS + "?watch=true&resourceVersion=1&timeoutSeconds=2",
        headers={"Authorization": f"Bearer {cluster.running.admin.token}"},
    )
    with urllib.request.urlopen(request, context=context) as response:
        event = json.loads(response.readline())
    assert event["type"] == "ERROR" and event["object"]["code"] == 410
