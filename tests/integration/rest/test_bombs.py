"""Bodies built to cost more than they weigh, over raw HTTPS (issue 32).

A YAML alias bomb from an identity with no roles is refused 403 before a
byte of it is decoded (on the old code it was expanded first, for minutes);
from one with the right it is refused 400 with Kubernetes' decoder message,
and aliases of a big scalar past the decoded-size bound 413.
A JSON patch is bounded as kube-apiserver bounds it: 10,000 operations
(413), 3 MiB added by `copy` (422), and its result nested no deeper than a
request body may be (422). Nothing is stored by any of them."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.integration.rest.conftest import Cluster

pytestmark = pytest.mark.slow

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def call(cluster: Cluster, method: str, path: str, body: bytes | None = None,
         content_type: str = "application/json", token: str | None = None,
         timeout: float = 30) -> tuple[int, dict[str, Any]]:  # fmt: skip
    context = ssl.create_default_context(cadata=cluster.running.admin.ca_pem.decode())
    context.check_hostname = False
    headers = {"Content-Type": content_type,
               "Authorization": f"Bearer {cluster.running.admin.token if token is None else token}"}  # fmt: skip
    request = urllib.request.Request(cluster.url + path, body, headers, method=method)
    try:
        with urllib.request.urlopen(request, context=context, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def laughs(levels: int = 9, fanout: int = 9) -> bytes:
    """The billion laughs: `levels` anchors, each `fanout` aliases of the one before."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: lol}", "x:",
             f"  a0: &a0 [{', '.join(['lol'] * fanout)}]"]  # fmt: skip
    for i in range(1, levels):
        lines.append(f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fanout)}]")
    lines.append(f"data: {{k: *a{levels - 1}}}")
    return ("\n".join(lines) + "\n").encode()


def test_an_alias_bomb_from_an_identity_without_roles_is_refused_undecoded(
    cluster: Cluster,
) -> None:
    authority = cluster.running.server.authority
    assert authority is not None
    nobody = authority.user_token("mallory")
    bomb = laughs()
    assert len(bomb) < 800
    code, status = call(cluster, "POST", CONFIGMAPS, bomb, "application/yaml", nobody)
    assert code == 403 and status["reason"] == "Forbidden", status
    assert call(cluster, "GET", "/version")[0] == 200


def test_an_alias_bomb_with_the_right_to_create_is_400(cluster: Cluster) -> None:
    code, status = call(cluster, "POST", CONFIGMAPS, laughs(), "application/yaml")
    assert code == 400 and status["reason"] == "BadRequest"
    assert status["message"] == "malformed YAML: yaml: document contains excessive aliasing"
    assert call(cluster, "GET", f"{CONFIGMAPS}/lol")[0] == 404
    # a few aliases are fine, and become plain copies
    small = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: few}\nx: &v hello\ndata: {a: *v}\n"
    code, created = call(cluster, "POST", CONFIGMAPS, small, "application/yaml")
    assert code == 201 and created["data"] == {"a": "hello"}


def test_aliases_of_a_big_scalar_are_413(cluster: Cluster) -> None:
    """Few nodes, each an alias of a 2 MiB string: within go-yaml's alias ratio,
    but 40 GB decoded (the old code decoded it, then ran out of memory)."""
    big = "x" * (2 << 20)
    numbers = ",".join(str(i) for i in range(300))
    bomb = (f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: wide}}\nx: &a {big}\n"
            f"y: [{numbers}]\nz: [{','.join(['*a'] * 20_000)}]\n").encode()  # fmt: skip
    assert len(bomb) < 3 << 20
    code, status = call(cluster, "POST", CONFIGMAPS, bomb, "application/yaml")
    assert code == 413 and status["reason"] == "RequestEntityTooLarge", status
    assert status["message"] == "the YAML document decodes to more than 12582912 bytes"
    assert call(cluster, "GET", f"{CONFIGMAPS}/wide")[0] == 404


def test_json_patch_limits(cluster: Cluster) -> None:
    cm = {"metadata": {"name": "patched"}, "data": {"a": "x" * 1000}}
    assert call(cluster, "POST", CONFIGMAPS, json.dumps(cm).encode())[0] == 201
    path = f"{CONFIGMAPS}/patched"
    many = [{"op": "test", "path": "/kind", "value": "ConfigMap"}] * 10_001
    code, status = call(cluster, "PATCH", path, json.dumps(many).encode(),
                        "application/json-patch+json")  # fmt: skip
    assert code == 413 and status["message"] == (
        "The allowed maximum operations in a JSON patch is 10000, got 10001"
    )
    # each copy doubles the object: thirty would need gigabytes
    doubling = [{"op": "copy", "from": "/data", "path": f"/data/k{i}"} for i in range(30)]
    code, status = call(cluster, "PATCH", path, json.dumps(doubling).encode(),
                        "application/json-patch+json")  # fmt: skip
    assert code == 422, status
    assert "Unable to complete the copy, the accumulated size increase of copy is" in \
        status["message"] and "exceeding the limit 3145728" in status["message"]  # fmt: skip
    # a shallow patch may not build a deep object
    deep = [{"op": "add", "path": "/data2" + "/k" * i, "value": {}} for i in range(150)]
    code, status = call(cluster, "PATCH", path, json.dumps(deep).encode(),
                        "application/json-patch+json")  # fmt: skip
    assert code == 422 and "nested more than 100 levels deep" in status["message"], status
    code, stored = call(cluster, "GET", path)
    assert code == 200 and stored["data"] == cm["data"] and "data2" not in stored
    assert "annotations" not in stored["metadata"]
