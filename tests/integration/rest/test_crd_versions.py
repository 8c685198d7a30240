"""A CustomResourceDefinition with several versions, against a real control
plane, through kubectl 1.33 (by its versioned path) and the official Python
client: every served version answers in its own apiVersion, objects are
stored in the storage version, a deprecated version warns, an unserved one
is not found, discovery prefers the highest version, storedVersions follow
the storage version and keep a stored version in the spec; a conversion
webhook (HTTPS on 127.0.0.1, its own CA in caBundle) converts on create,
get, list and watch, and a broken one is refused with Kubernetes' errors,
nothing stored."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from controlplane.api import crd as crd_module
from controlplane.apiserver.codec import ROOT, decode
from tests.harness.ports import free_port
from tests.harness.webhook_server import Raw, WebhookServer
from tests.integration.rest.conftest import Cluster

kubernetes = pytest.importorskip("kubernetes")
client: Any = kubernetes.client
config: Any = kubernetes.config
watch: Any = kubernetes.watch
ApiException: Any = kubernetes.client.exceptions.ApiException

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("need_kubectl")]

Object = dict[str, Any]
SCHEMA = {
    "openAPIV3Schema": {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "replicas": {"type": "integer"},
                    "size": {"type": "integer"},
                    "colour": {"type": "string"},
                },
            }
        },
    }
}


def crd_of(group: str, versions: list[Object], conversion: Object | None = None) -> Object:
    spec: Object = {
        "group": group,
        "scope": "Namespaced",
        "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
        "versions": [{"schema": SCHEMA, **v} for v in versions],
    }
    if conversion is not None:
        spec["conversion"] = conversion
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gizmos.{group}"},
        "spec": spec,
    }


def gizmo(group: str, version: str, name: str, spec: Object) -> Object:
    return {"apiVersion": f"{group}/{version}", "kind": "Gizmo",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


@pytest.fixture
def api(cluster: Cluster) -> Any:
    return config.new_client_from_config(config_file=str(cluster.kubeconfig))


@pytest.fixture
def applied(cluster: Cluster) -> Iterator[Callable[[Object], None]]:
    """Applies CRDs with kubectl; removes them (and their kinds) afterwards."""
    names: list[str] = []

    def apply(obj: Object) -> None:
        cluster.kubectl("apply", "-f", "-", input=json.dumps(obj))
        names.append(obj["metadata"]["name"])

    try:
        yield apply
    finally:
        for name in dict.fromkeys(names):
            cluster.kubectl("delete", "crd", name, "--ignore-not-found", check=False)
            crd_module.unregister(name)


def stored(cluster: Cluster, group: str, name: str) -> Object:
    """The object as it is in storage."""
    kv = cluster.running.store.get(f"{ROOT}gizmos.{group}/default/{name}")
    assert kv is not None, name
    return decode(kv.value, kv.mod_rev)


NONE_GROUP = "versions.skiff.dev"
THREE = [
    {"name": "v1beta1", "served": True, "storage": False, "deprecated": True},
    {"name": "v1", "served": True, "storage": True},
    {"name": "v2", "served": True, "storage": False},
]


def test_each_served_version_answers_in_its_own_api_version(
    cluster: Cluster, applied: Callable[[Object], None], api: Any
) -> None:
    g = NONE_GROUP
    applied(crd_of(g, THREE))
    cluster.kubectl("apply", "-f", "-", input=json.dumps(gizmo(g, "v2", "a", {"replicas": 2})))
    assert stored(cluster, g, "a")["apiVersion"] == f"{g}/v1"  # the storage version
    for version in ("v1", "v2"):
        got = json.loads(cluster.kubectl("get", f"gizmos.{version}.{g}", "a", "-o", "json").stdout)
        assert got["apiVersion"] == f"{g}/{version}" and got["spec"] == {"replicas": 2}
        raw = cluster.kubectl("get", "--raw", f"/apis/{g}/{version}/namespaces/default/gizmos")
        assert [i["apiVersion"] for i in json.loads(raw.stdout)["items"]] == [f"{g}/{version}"]
    custom = client.CustomObjectsApi(api)
    made = custom.create_namespaced_custom_object(
        g, "v2", "default", "gizmos", gizmo(g, "v2", "b", {"colour": "red"})
    )
    assert made["apiVersion"] == f"{g}/v2"
    assert (
        custom.get_namespaced_custom_object(g, "v1", "default", "gizmos", "b")["apiVersion"]
        == f"{g}/v1"
    )
    patched = custom.patch_namespaced_custom_object(
        g, "v2", "default", "gizmos", "b", {"spec": {"colour": "blue"}}
    )
    assert patched["apiVersion"] == f"{g}/v2" and patched["spec"] == {"colour": "blue"}
    listed = custom.list_namespaced_custom_object(g, "v2", "default", "gizmos")
    assert listed["apiVersion"] == f"{g}/v2"
    assert {i["apiVersion"] for i in listed["items"]} == {f"{g}/v2"}
    seen = []
    for event in watch.Watch().stream(custom.list_namespaced_custom_object, g, "v2", "default",
                                      "gizmos", timeout_seconds=2):  # fmt: skip
        seen.append(event["object"]["apiVersion"])
        if len(seen) == 2:
            break
    assert seen == [f"{g}/v2", f"{g}/v2"]
    # Discovery: the preferred version is the highest (v2), not the storage one.
    group_doc = json.loads(cluster.kubectl("get", "--raw", f"/apis/{g}").stdout)
    assert group_doc["preferredVersion"]["version"] == "v2"
    assert [v["version"] for v in group_doc["versions"]] == ["v2", "v1", "v1beta1"]
    # A deprecated version warns with Kubernetes' text.
    got = cluster.kubectl("get", f"gizmos.v1beta1.{g}", "a", "-o", "json")
    assert f"Warning: {g}/v1beta1 Gizmo is deprecated; use {g}/v2 Gizmo" in got.stderr
    assert json.loads(got.stdout)["apiVersion"] == f"{g}/v1beta1"


def test_unserved_versions_and_stored_versions(
    cluster: Cluster, applied: Callable[[Object], None]
) -> None:
    g = "stored.skiff.dev"
    v1 = {"name": "v1", "served": True, "storage": True}
    v2 = {"name": "v2", "served": False, "storage": False}
    applied(crd_of(g, [v1, v2]))
    missing = cluster.kubectl("get", "--raw", f"/apis/{g}/v2/namespaces/default/gizmos",
                              check=False)  # fmt: skip
    assert missing.returncode != 0 and "NotFound" in missing.stderr, missing.stderr
    crd_name = f"gizmos.{g}"

    def stored_versions() -> list[str]:
        out = cluster.kubectl("get", "crd", crd_name, "-o", "jsonpath={.status.storedVersions}")
        return list(json.loads(out.stdout))

    assert stored_versions() == ["v1"]
    # The storage version moves to v2: v1 stays recorded (objects may be in it).
    applied(crd_of(g, [{**v1, "storage": False}, {**v2, "served": True, "storage": True}]))
    assert stored_versions() == ["v1", "v2"]
    cluster.kubectl("apply", "-f", "-", input=json.dumps(gizmo(g, "v1", "x", {"size": 1})))
    assert stored(cluster, g, "x")["apiVersion"] == f"{g}/v2"
    # A version still in storedVersions cannot leave the spec.
    refused = cluster.kubectl("apply", "-f", "-", check=False,
                              input=json.dumps(crd_of(g, [{**v2, "served": True, "storage": True}])))  # fmt: skip
    assert refused.returncode != 0
    assert 'status.storedVersions[0]: Invalid value: "v1": must appear in spec.versions' in (
        refused.stderr
    ), refused.stderr
    # Once the storage version migration drops it from the status, it can.
    patch = json.dumps({"status": {"storedVersions": ["v2"]}})
    cluster.kubectl("patch", "crd", crd_name, "--subresource=status", "--type=merge", "-p", patch)
    applied(crd_of(g, [{**v2, "served": True, "storage": True}]))
    assert stored_versions() == ["v2"]


def test_a_storage_version_that_is_not_served(
    cluster: Cluster, applied: Callable[[Object], None]
) -> None:
    """Kubernetes allows it (a version on its way out): objects are stored in
    it, only the served version answers, discovery lists only that one."""
    g = "unserved.skiff.dev"
    applied(crd_of(g, [{"name": "v1", "served": False, "storage": True},
                       {"name": "v2", "served": True, "storage": False}]))  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(gizmo(g, "v2", "u", {"size": 1})))
    assert stored(cluster, g, "u")["apiVersion"] == f"{g}/v1"
    got = json.loads(cluster.kubectl("get", f"gizmos.{g}", "u", "-o", "json").stdout)
    assert got["apiVersion"] == f"{g}/v2"
    missing = cluster.kubectl("get", "--raw", f"/apis/{g}/v1/namespaces/default/gizmos",
                              check=False)  # fmt: skip
    assert missing.returncode != 0 and "NotFound" in missing.stderr, missing.stderr
    group_doc = json.loads(cluster.kubectl("get", "--raw", f"/apis/{g}").stdout)
    assert [v["version"] for v in group_doc["versions"]] == ["v2"]
    paths = json.loads(cluster.kubectl("get", "--raw", "/openapi/v3").stdout)["paths"]
    assert f"apis/{g}/v2" in paths and f"apis/{g}/v1" not in paths


# ---- conversion webhooks ---------------------------------------------------------


HOOK_GROUP = "hooked.skiff.dev"


def convert(review: Object) -> Object:
    """A conversion webhook: v1's spec.replicas is v2's spec.size."""
    request = review["request"]
    desired = request["desiredAPIVersion"]
    out = []
    for obj in request["objects"]:
        obj = json.loads(json.dumps(obj))
        spec = obj.get("spec") or {}
        if desired.endswith("/v2") and "replicas" in spec:
            spec["size"] = spec.pop("replicas")
        elif desired.endswith("/v1") and "size" in spec:
            spec["replicas"] = spec.pop("size")
        obj["apiVersion"] = desired
        out.append(obj)
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": request["uid"], "convertedObjects": out,
                         "result": {"status": "Success"}}}  # fmt: skip


def hooked_crd(hook: WebhookServer) -> Object:
    webhook = {"clientConfig": hook.client_config("/convert"), "conversionReviewVersions": ["v1"]}
    columns = {"v1": "replicas", "v2": "size"}
    return crd_of(HOOK_GROUP, [{"name": v, "served": True, "storage": v == "v1",
                                "additionalPrinterColumns": [{"name": field.title(),
                                                              "type": "integer",
                                                              "jsonPath": f".spec.{field}"}]}
                               for v, field in columns.items()],
                  {"strategy": "Webhook", "webhook": webhook})  # fmt: skip


@pytest.fixture
def hook() -> Iterator[WebhookServer]:
    server = WebhookServer(convert)
    with server:
        yield server


def test_conversion_webhook_converts_on_create_get_list_and_watch(
    cluster: Cluster, applied: Callable[[Object], None], api: Any, hook: WebhookServer
) -> None:
    g = HOOK_GROUP
    applied(hooked_crd(hook))
    cluster.kubectl("apply", "-f", "-", input=json.dumps(gizmo(g, "v2", "a", {"size": 3})))
    assert stored(cluster, g, "a")["spec"] == {"replicas": 3}  # converted, stored as v1
    review = next(r for r in hook.requests if r["request"]["desiredAPIVersion"] == f"{g}/v1")
    assert review["apiVersion"] == "apiextensions.k8s.io/v1" and review["request"]["uid"]
    assert review["request"]["objects"][0]["spec"] == {"size": 3}
    assert hook.paths[0].startswith("/convert")
    got = json.loads(cluster.kubectl("get", f"gizmos.v2.{g}", "a", "-o", "json").stdout)
    assert got["apiVersion"] == f"{g}/v2" and got["spec"] == {"size": 3}
    assert got["metadata"]["uid"] == stored(cluster, g, "a")["metadata"]["uid"]
    got = json.loads(cluster.kubectl("get", f"gizmos.v1.{g}", "a", "-o", "json").stdout)
    assert got["spec"] == {"replicas": 3}
    # kubectl's Tables: the version's columns over the converted objects.
    table = cluster.kubectl("get", f"gizmos.v2.{g}").stdout.split("\n")
    assert table[0].split() == ["NAME", "SIZE"] and table[1].split() == ["a", "3"], table
    table = cluster.kubectl("get", f"gizmos.v1.{g}", "a").stdout.split("\n")
    assert table[0].split() == ["NAME", "REPLICAS"] and table[1].split() == ["a", "3"], table
    custom = client.CustomObjectsApi(api)
    rv = custom.list_namespaced_custom_object(g, "v2", "default", "gizmos")["metadata"][
        "resourceVersion"
    ]
    custom.create_namespaced_custom_object(g, "v1", "default", "gizmos",
                                           gizmo(g, "v1", "b", {"replicas": 5}))  # fmt: skip
    calls = len(hook.requests)
    listed = custom.list_namespaced_custom_object(g, "v2", "default", "gizmos")
    assert {i["metadata"]["name"]: i["spec"] for i in listed["items"]} == {
        "a": {"size": 3},
        "b": {"size": 5},
    }
    assert len(hook.requests) == calls + 1  # one ConversionReview for the list
    assert len(hook.requests[-1]["request"]["objects"]) == 2
    custom.patch_namespaced_custom_object(g, "v2", "default", "gizmos", "b", {"spec": {"size": 6}})
    assert stored(cluster, g, "b")["spec"] == {"replicas": 6}
    events = []
    for event in watch.Watch().stream(custom.list_namespaced_custom_object, g, "v2", "default",
                                      "gizmos", resource_version=rv, timeout_seconds=5):  # fmt: skip
        events.append((event["type"], event["object"]["apiVersion"], event["object"]["spec"]))
        if len(events) == 2:
            break
    assert events == [("ADDED", f"{g}/v2", {"size": 5}), ("MODIFIED", f"{g}/v2", {"size": 6})]


def failing(answer: Callable[[Object], Object | Raw]) -> Callable[[Any], Object | Raw]:
    """A webhook that converts to v1 (creates work) and answers conversions
    to v2 with `answer`."""

    def hook(review: Any) -> Object | Raw:
        if review["request"]["desiredAPIVersion"].endswith("/v1"):
            return convert(review)
        return answer(review)

    return hook


def twice(review: Object) -> Object:
    answer = convert(review)
    answer["response"]["convertedObjects"] *= 2
    return answer


def renamed(review: Object) -> Object:
    answer = convert(review)
    answer["response"]["convertedObjects"][0]["metadata"]["name"] = "other"
    return answer


def new_uid(review: Object) -> Object:
    answer = convert(review)
    answer["response"]["convertedObjects"][0]["metadata"]["uid"] = "0000"
    return answer


def wrong_review_uid(review: Object) -> Object:
    answer = convert(review)
    answer["response"]["uid"] = "not-the-request"
    return answer


def refused(review: Object) -> Object:
    answer = convert(review)
    answer["response"] = {"uid": review["request"]["uid"],
                          "result": {"status": "Failure", "message": "cannot convert a"}}  # fmt: skip
    return answer


def wrong_version(review: Object) -> Object:
    answer = convert(review)
    answer["response"]["convertedObjects"][0]["apiVersion"] = f"{HOOK_GROUP}/v1"
    return answer


GVK = f"conversion webhook for {HOOK_GROUP}/v1, Kind=Gizmo"  # a get's
LIST = f"conversion webhook for {HOOK_GROUP}/v1, Kind=GizmoList"  # a list's
WRONG_VERSION = f"invalid groupVersion (expected {HOOK_GROUP}/v2, received {HOOK_GROUP}/v1)"


@pytest.mark.parametrize(
    ("answer", "on_get", "on_list"),
    [
        (lambda r: Raw(200, b"<html>garbage"), f"{GVK} failed: ", f"{LIST} failed: "),
        (lambda r: Raw(500, b"boom"), f"{GVK} failed: Post ", f"{LIST} failed: Post "),
        (twice, f"{GVK} returned 2 objects, expected 1", f"{LIST} returned 2 objects, expected 1"),
        (
            renamed,
            f"{GVK} returned invalid object: must have the same name: a != other",
            f"{LIST} returned invalid converted object at index 0: must have the same name: a",
        ),
        (
            new_uid,
            f"{GVK} returned invalid object: must have the same UID",
            f"{LIST} returned invalid converted object at index 0: must have the same UID",
        ),
        (
            wrong_review_uid,
            f'{GVK} failed: expected response.uid="',
            f'{LIST} failed: expected response.uid="',
        ),
        (refused, f"{GVK} failed: cannot convert a", f"{LIST} failed: cannot convert a"),
        (
            wrong_version,
            f"{GVK} returned invalid object at index 0: {WRONG_VERSION}",
            f"{LIST} returned invalid converted object at index 0: {WRONG_VERSION}",
        ),
    ],
    ids=["garbage", "http-500", "count", "name", "uid", "review-uid", "failure", "version"],
)
def test_a_broken_conversion_webhook_gets_kubernetes_errors_on_read(
    cluster: Cluster, applied: Callable[[Object], None], answer: Callable[[Object], Any],
    on_get: str, on_list: str,
) -> None:  # fmt: skip
    g = HOOK_GROUP
    with WebhookServer(failing(answer)) as hook:
        applied(hooked_crd(hook))
        cluster.kubectl("apply", "-f", "-", input=json.dumps(gizmo(g, "v1", "a", {"replicas": 1})))
        got = cluster.kubectl("get", f"gizmos.v2.{g}", "a", "-o", "json", check=False)
        assert got.returncode != 0 and on_get in got.stderr, got.stderr
        listed = cluster.kubectl("get", f"gizmos.v2.{g}", "-o", "json", check=False)
        assert listed.returncode != 0 and on_list in listed.stderr, listed.stderr
        # A watch's events are converted one by one: the stream ends with an ERROR.
        url = f"/apis/{g}/v2/namespaces/default/gizmos?watch=true&timeoutSeconds=5"
        lines = cluster.kubectl("get", "--raw", url).stdout.splitlines()
        event = json.loads(lines[-1])
        assert event["type"] == "ERROR" and on_get in event["object"]["message"], lines


def test_writes_through_a_broken_conversion_webhook_store_nothing(
    cluster: Cluster, applied: Callable[[Object], None]
) -> None:
    g = HOOK_GROUP
    with WebhookServer(twice) as hook:
        applied(hooked_crd(hook))
        made = cluster.kubectl("create", "-f", "-", check=False,
                               input=json.dumps(gizmo(g, "v2", "a", {"size": 1})))  # fmt: skip
        gvk = f"{g}/v2, Kind=Gizmo"
        assert made.returncode != 0
        assert f"conversion webhook for {gvk} returned 2 objects, expected 1" in made.stderr
    # A webhook no one serves: refused too, with the connection's error.
    down = hooked_crd(hook)
    down["spec"]["conversion"]["webhook"]["clientConfig"]["url"] = (
        f"https://127.0.0.1:{free_port()}/convert"
    )
    applied(down)
    made = cluster.kubectl("create", "-f", "-", check=False,
                           input=json.dumps(gizmo(g, "v2", "b", {"size": 1})))  # fmt: skip
    assert made.returncode != 0
    assert f"conversion webhook for {gvk} failed: Post" in made.stderr, made.stderr
    assert cluster.running.store.range(f"{ROOT}gizmos.{g}/").items == []


def test_a_conversion_webhook_behind_a_service(
    cluster: Cluster, applied: Callable[[Object], None]
) -> None:
    """clientConfig.service: the API server reaches the Service's endpoint
    itself and verifies the certificate for `<name>.<namespace>.svc` against
    the caBundle."""
    g = HOOK_GROUP
    with WebhookServer(convert, names=["conv.default.svc"]) as hook:
        endpoints = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "conv"},
                     "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                                  "ports": [{"name": "https", "port": hook.port}]}]}  # fmt: skip
        service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "conv"},
                   "spec": {"ports": [{"name": "https", "port": 443}]}}  # fmt: skip
        both = json.dumps({"apiVersion": "v1", "kind": "List", "items": [service, endpoints]})
        cluster.kubectl("apply", "-f", "-", input=both)
        try:
            crd = hooked_crd(hook)
            crd["spec"]["conversion"]["webhook"]["clientConfig"] = {
                "service": {"namespace": "default", "name": "conv", "path": "/convert"},
                "caBundle": hook.ca_bundle,
            }
            applied(crd)
            cluster.kubectl("apply", "-f", "-", input=json.dumps(gizmo(g, "v2", "s", {"size": 4})))
            assert stored(cluster, g, "s")["spec"] == {"replicas": 4}
            got = json.loads(cluster.kubectl("get", f"gizmos.v2.{g}", "s", "-o", "json").stdout)
            assert got["spec"] == {"size": 4}
            assert hook.paths and all(p.startswith("/convert?timeout=") for p in hook.paths)
        finally:
            cluster.kubectl("delete", "-f", "-", input=both, check=False)
