"""The REST API's pure parts: URL resolution, Status bodies, body decoding."""

from __future__ import annotations

import pytest

from controlplane.apiserver.rest import body, discovery
from controlplane.apiserver.rest.paths import resolve
from controlplane.apiserver.rest.status import BadRequest, status_object
from controlplane.client import errors


@pytest.mark.parametrize(
    ("path", "kind", "namespace", "name", "sub"),
    [
        ("/api/v1/pods", "Pod", "", "", ""),
        ("/api/v1/namespaces/a/pods/p/log", "Pod", "a", "p", "log"),
        ("/api/v1/namespaces/a", "Namespace", "", "a", ""),
        ("/api/v1/namespaces/a/status", "Namespace", "", "a", "status"),
        ("/apis/apps/v1/namespaces/b/deployments/d/scale", "Deployment", "b", "d", "scale"),
        ("/apis/events.k8s.io/v1/events", "Event", "", "", ""),
        ("/api/v1/nodes/n1", "Node", "", "n1", ""),
    ],
)
def test_resolve(path: str, kind: str, namespace: str, name: str, sub: str) -> None:
    target = resolve([s for s in path.split("/") if s])
    assert target is not None
    assert (target.info.kind, target.namespace, target.name, target.subresource) == (
        kind, namespace, name, sub,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("path", "named"),
    [
        ("/apis/nope.io/v1/things", "nope.io/v1"),
        ("/api/v1/widgets", "widgets"),
        ("/apis/apps/v1/pods", "pods"),  # pods are not in apps/v1
        ("/api/v1/namespaces/a/nodes/n", "cluster-scoped"),
    ],
)
def test_unknown_is_not_found_naming_it(path: str, named: str) -> None:
    with pytest.raises(errors.NotFound, match=named):
        resolve([s for s in path.split("/") if s])


def test_discovery_paths_are_no_resources() -> None:
    assert resolve(["api", "v1"]) is None
    assert resolve(["apis", "apps", "v1"]) is None
    assert resolve(["version"]) is None


def test_invalid_status_carries_every_cause() -> None:
    err = errors.Invalid('Pod "p" is invalid: spec.a: required; metadata.name: too long')
    code, status = status_object(err, "pods", "p")
    assert code == 422 and status["reason"] == "Invalid"
    assert status["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": "required", "field": "spec.a"},
        {"reason": "FieldValueInvalid", "message": "too long", "field": "metadata.name"},
    ]


@pytest.mark.parametrize(
    ("err", "code", "reason"),
    [
        (errors.NotFound("x"), 404, "NotFound"),
        (errors.AlreadyExists("x"), 409, "AlreadyExists"),
        (errors.Conflict("x"), 409, "Conflict"),
        (errors.Gone("x"), 410, "Expired"),
        (errors.Unauthenticated("x"), 401, "Unauthorized"),
        (errors.Forbidden("x"), 403, "Forbidden"),
        (BadRequest("x"), 400, "BadRequest"),
        (errors.TooManyRequests("x"), 429, "TooManyRequests"),
    ],
)
def test_codes_and_reasons(err: errors.ApiError, code: int, reason: str) -> None:
    got_code, status = status_object(err)
    assert (got_code, status["reason"], status["code"]) == (code, reason, code)


def test_body_decoding() -> None:
    assert body.decode(b'{"a": 1}', "application/json") == {"a": 1}
    assert body.decode(b"a: 1\n", "application/yaml") == {"a": 1}
    with pytest.raises(BadRequest, match="line 2, column"):
        body.decode(b'{"a": 1,\n }', "application/json")
    with pytest.raises(BadRequest, match="malformed YAML at line 2, column 1"):
        body.decode(b"a: [1\n", "application/apply-patch+yaml")
    deep = b'{"a":' * 150 + b"1" + b"}" * 150
    with pytest.raises(errors.Invalid, match="nested"):
        body.decode(deep, "application/json")


def test_every_kind_is_discoverable_at_its_group_version() -> None:
    from controlplane.api.kinds import builtin_kinds

    for info in builtin_kinds():
        found = discovery.resource_list(info.api_version)
        assert found is not None
        assert info.plural in [r["name"] for r in found["resources"]]
    groups = {g["name"] for g in discovery.group_list()["groups"]}
    assert {"apps", "batch", "autoscaling", "coordination.k8s.io", "scheduling.k8s.io"} <= groups
