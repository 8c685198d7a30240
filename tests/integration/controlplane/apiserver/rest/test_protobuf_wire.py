"""Protobuf on the REST wire, as kube-apiserver: bodies in, objects, lists,
Status errors and watch frames out, chosen by Accept; custom resources JSON
only (415 for a protobuf body, 406 when only protobuf is accepted)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.api.k8sproto import envelope
from tests.harness.rest_wire import PROTOBUF, Api, serve

CMS = "/api/v1/namespaces/default/configmaps"
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
BOTH = f"{PROTOBUF}, application/json"  # what client-go sends


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with serve(tmp_path) as api:
        yield api


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"k": "v"}, "binaryData": {"b": "AAE="}}  # fmt: skip


def deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": 0, "selector": {"matchLabels": labels},
                     "strategy": {"rollingUpdate": {"maxSurge": "50%", "maxUnavailable": 0}},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "automountServiceAccountToken": False,
                         "containers": [{"name": "c", "image": "busybox",
                                         "ports": [{"containerPort": 80}],
                                         "resources": {"limits": {"cpu": "250m"}}}]}}}}  # fmt: skip


def test_a_protobuf_create_stores_what_json_stores(api: Api) -> None:
    pb = api.call("POST", DEPLOY, envelope.encode(deployment("pb")), PROTOBUF, BOTH)
    assert pb.status == 201, pb.body
    assert pb.headers["Content-Type"] == PROTOBUF
    created = envelope.decode(pb.body)
    assert api.call("POST", DEPLOY, deployment("js")).status == 201
    by_pb = api.call("GET", f"{DEPLOY}/pb").json()
    by_json = api.call("GET", f"{DEPLOY}/js").json()
    assert created == by_pb
    for obj in (by_pb, by_json):
        meta = obj["metadata"]
        for key in ("name", "uid", "creationTimestamp", "resourceVersion", "managedFields"):
            meta.pop(key)
        meta["labels"] = meta["annotations"] = None
        obj["spec"]["selector"] = obj["spec"]["template"]["metadata"] = None
    assert by_pb == by_json
    # replicas 0 and automountServiceAccountToken false are values, not unset
    assert by_pb["spec"]["replicas"] == 0
    assert by_pb["spec"]["template"]["spec"]["automountServiceAccountToken"] is False


def test_accept_picks_by_q_value_then_order(api: Api) -> None:
    api.call("POST", CMS, configmap("c"))
    cases = {
        BOTH: PROTOBUF,
        f"application/json;q=0.9, {PROTOBUF}": PROTOBUF,
        f"{PROTOBUF};q=0.5, application/json": "application/json",
        f"{PROTOBUF};q=0, */*": "application/json",
        "application/json;as=Table;v=v1;g=meta.k8s.io, application/json": "application/json",
        "": "application/json",
    }
    for accept, wanted in cases.items():
        answer = api.call("GET", f"{CMS}/c", accept=accept)
        assert answer.status == 200 and answer.headers["Content-Type"].startswith(wanted), accept
    assert api.call("GET", f"{CMS}/c", accept="text/html").status == 406


def test_writes_answer_as_accepted_and_a_406_writes_nothing(api: Api) -> None:
    """The answer's serialization is negotiated before the write, as
    kube-apiserver's handlers do: nothing acceptable is a 406 and nothing
    written (this server wrote, then answered 406)."""
    refused = api.call("POST", CMS, envelope.encode(configmap("no")), PROTOBUF, "text/html")
    assert refused.status == 406, refused.body
    assert api.call("GET", f"{CMS}/no").status == 404
    assert api.call("POST", CMS, configmap("no"), accept="text/html").status == 406  # JSON alike
    assert api.call("GET", f"{CMS}/no").status == 404
    # an update and a patch alike: refused, the object as it was
    before = api.call("POST", CMS, configmap("kept")).json()
    changed = {**before, "data": {"k": "changed"}}
    assert api.call("PUT", f"{CMS}/kept", changed, accept="text/html").status == 406
    patch = api.call("PATCH", f"{CMS}/kept", {"data": {"k": "patched"}},
                     "application/merge-patch+json", "text/html")  # fmt: skip
    assert patch.status == 406
    assert api.call("DELETE", f"{CMS}/kept", accept="text/html").status == 406
    assert api.call("DELETE", CMS, accept="text/html").status == 406  # deletecollection
    assert api.call("GET", f"{CMS}/kept").json() == before
    # a subresource's answer alike (a Scale)
    assert api.call("POST", DEPLOY, deployment("d")).status == 201
    scale = api.call("GET", f"{DEPLOY}/d/scale").json()
    more = {**scale, "spec": {"replicas": 3}}
    assert api.call("PUT", f"{DEPLOY}/d/scale", more, accept="text/html").status == 406
    assert api.call("GET", f"{DEPLOY}/d").json()["spec"]["replicas"] == 0
    as_json = api.call("POST", CMS, envelope.encode(configmap("js")), PROTOBUF, "application/json")
    assert as_json.status == 201 and as_json.headers["Content-Type"].startswith("application/json")
    assert as_json.json()["binaryData"] == {"b": "AAE="}
    dry = api.call("POST", f"{CMS}?dryRun=All", envelope.encode(configmap("dry")), PROTOBUF, BOTH)
    assert dry.status == 201 and envelope.decode(dry.body)["metadata"]["name"] == "dry"
    assert api.call("GET", f"{CMS}/dry").status == 404


def test_updates_lists_and_errors(api: Api) -> None:
    for name in ("a", "b"):
        assert api.call("POST", CMS, envelope.encode(configmap(name)), PROTOBUF, BOTH).status == 201
    current = envelope.decode(api.call("GET", f"{CMS}/a", accept=PROTOBUF).body)
    current["data"] = {"k": "changed"}
    put = api.call("PUT", f"{CMS}/a", envelope.encode(current), PROTOBUF, BOTH)
    assert put.status == 200 and envelope.decode(put.body)["data"] == {"k": "changed"}
    listed = envelope.decode(api.call("GET", CMS, accept=BOTH).body)
    assert listed["kind"] == "ConfigMapList"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a", "b"]
    assert int(listed["metadata"]["resourceVersion"]) > 0
    missing = api.call("GET", f"{CMS}/nope", accept=BOTH)
    assert missing.status == 404 and missing.headers["Content-Type"] == PROTOBUF
    status = envelope.decode(missing.body)
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "NotFound", 404)
    gone = api.call("DELETE", f"{CMS}/b", accept=BOTH)
    assert envelope.decode(gone.body)["status"] == "Success"


def test_watch_streams_length_prefixed_frames(api: Api) -> None:
    api.call("POST", CMS, configmap("w"))
    answer = api.call("GET", f"{CMS}?watch=true&timeoutSeconds=1", accept=BOTH)
    assert answer.headers["Content-Type"] == f"{PROTOBUF};stream=watch"
    events = envelope.read_frames(answer.body)
    assert [(t, o["metadata"]["name"]) for t, o in events] == [("ADDED", "w")]
    assert events[0][1]["kind"] == "ConfigMap" and events[0][1]["data"] == {"k": "v"}


def test_custom_resources_are_json_only(api: Api) -> None:
    queues = "/apis/scheduling.volcano.sh/v1beta1/queues"
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
             "metadata": {"name": "q"}, "spec": {"weight": 1}}  # fmt: skip
    body = envelope.wrap("scheduling.volcano.sh/v1beta1", "Queue", b"")
    refused = api.call("POST", queues, body, PROTOBUF, BOTH)
    assert refused.status == 415
    assert (
        api.call("POST", queues, queue, accept=BOTH)
        .headers["Content-Type"]
        .startswith("application/json")
    )
    assert api.call("GET", f"{queues}/q", accept=PROTOBUF).status == 406


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (b"k8s\x00\x0a\xff\xff\xff\x7f", 400, "past the end of the message"),
        (b"not protobuf", 400, "must start with the magic"),
        (envelope.wrap("v1", "ConfigMap", b"\x0a\x05\x0a\x03\xff\xfe\xfd"), 400, "not valid UTF-8"),
        (envelope.wrap("example.com/v1", "Thing", b""), 415, "no protobuf serialization"),
    ],
)
def test_hostile_bodies_are_refused_naming_the_problem(
    api: Api, body: bytes, status: int, words: str
) -> None:
    answer = api.call("POST", CMS, body, PROTOBUF)
    assert answer.status == status
    assert words in answer.json()["message"]
    assert api.call("GET", CMS).json()["items"] == []


def test_unknown_fields_are_dropped_without_warnings(api: Api) -> None:
    raw = envelope.wrap("v1", "ConfigMap", b"\x0a\x03\x0a\x01u" + b"\xfa\x3e\x03abc")
    answer = api.call("POST", f"{CMS}?fieldValidation=Strict", raw, PROTOBUF)
    assert answer.status == 201 and "Warning" not in answer.headers
    assert json.loads(answer.body)["metadata"]["name"] == "u"
