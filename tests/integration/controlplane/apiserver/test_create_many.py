"""CreateMany: many independent creates in one call, against SQLite and etcd."""

from __future__ import annotations

from typing import Any

from controlplane.api import jsoncodec
from controlplane.client.apiclient import GrpcApiClient, open_channel
from controlplane.client.config import ClientConfig
from controlplane.client.errors import AlreadyExists, Forbidden, Invalid, NotFound
from controlplane.client.interface import BatchCreator, ListOptions
from proto.controlplane.v1 import api_pb2, api_pb2_grpc
from tests.harness.apiserver import Cluster


def pod(name: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **meta},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]},
    }


def test_each_item_is_a_create_of_its_own(client: GrpcApiClient) -> None:
    client.create("Pod", pod("taken"), "default")
    bad = pod("bad")
    bad["spec"]["containers"] = []
    results = client.create_many(
        [
            ("Pod", pod("a"), "default"),
            ("Pod", pod("taken"), "default"),
            ("Pod", bad, "default"),
            ("Pod", pod("", generateName="web-"), "default"),
            ("ConfigMap", {"metadata": {"name": "cm"}, "data": {"k": "v"}}, "default"),
            ("Pod", pod("b"), "no-such-namespace"),
            ("Gizmo", {"metadata": {"name": "g"}}, "default"),
        ]
    )
    a, taken, invalid, generated, cm, no_ns, unknown = results
    assert isinstance(a, dict) and a["metadata"]["uid"] and a["metadata"]["resourceVersion"]
    assert a["spec"]["restartPolicy"] == "Always"  # defaulted as Create does
    assert client.get("Pod", "a", "default")["metadata"]["uid"] == a["metadata"]["uid"]
    assert isinstance(taken, AlreadyExists)
    assert isinstance(invalid, Invalid) and "spec.containers" in str(invalid)
    assert isinstance(generated, dict) and generated["metadata"]["name"].startswith("web-")
    assert isinstance(cm, dict) and cm["kind"] == "ConfigMap"
    assert isinstance(no_ns, NotFound)
    assert isinstance(unknown, Invalid) and "Gizmo" in str(unknown)
    # Nothing of the refused items was stored.
    names = {p["metadata"]["name"] for p in client.list("Pod", "default").items}
    assert names == {"taken", "a", generated["metadata"]["name"]}


def test_omit_objects_answers_versions_and_the_same_errors(client: GrpcApiClient) -> None:
    assert isinstance(client, BatchCreator)
    client.create("Pod", pod("taken"), "default")
    bad = pod("bad")
    bad["spec"]["containers"] = []
    results = client.create_many(
        [
            ("Pod", pod("a"), "default"),
            ("Pod", pod("taken"), "default"),
            ("Pod", bad, "default"),
            ("Pod", pod("b"), "no-such-namespace"),
            ("ConfigMap", {"metadata": {"name": "cm"}, "data": {"k": "v"}}, "default"),
        ],
        omit_objects=True,
    )
    a, taken, invalid, no_ns, cm = results
    assert isinstance(taken, AlreadyExists)
    assert isinstance(invalid, Invalid) and "spec.containers" in str(invalid)
    assert isinstance(no_ns, NotFound)
    # A success is the created object's resourceVersion: the object as Create makes it.
    stored = client.get("Pod", "a", "default")
    assert isinstance(a, int) and stored["metadata"]["resourceVersion"] == str(a)
    assert stored["metadata"]["uid"] and stored["status"]["phase"] == "Pending"
    assert stored["metadata"]["managedFields"]
    assert isinstance(cm, int) and client.get("ConfigMap", "cm", "default")["data"] == {"k": "v"}


def test_omit_objects_sends_no_object_back(cluster: Cluster) -> None:
    assert cluster.server.authority is not None
    token = cluster.server.authority.admin_token()
    channel = open_channel(ClientConfig(cluster.address, cluster.pki.ca_pem, token))
    try:
        stub = api_pb2_grpc.ObjectsStub(channel)
        items = [
            api_pb2.CreateRequest(kind="Pod", namespace="default", json=jsoncodec.dumps(pod(n)))
            for n in ("x", "y")
        ]
        meta = (("authorization", f"Bearer {token}"),)
        brief = stub.CreateMany(
            api_pb2.CreateManyRequest(items=items[:1], omit_objects=True), metadata=meta
        )
        full = stub.CreateMany(api_pb2.CreateManyRequest(items=items[1:]), metadata=meta)
    finally:
        channel.close()
    (b,) = brief.results
    assert b.code == 0 and not b.HasField("object") and b.resource_version > 0
    (f,) = full.results
    assert f.code == 0 and f.HasField("object") and f.resource_version == f.object.resource_version


def test_many_items_arrive_in_order_on_a_watch(client: GrpcApiClient) -> None:
    start = client.list("Pod", "default").resource_version
    watch = client.watch(
        "Pod", "default", ListOptions(resource_version=start), allow_bookmarks=False
    )
    try:
        results = client.create_many([("Pod", pod(f"p{i:03d}"), "default") for i in range(200)])
        assert all(isinstance(r, dict) for r in results)
        versions = [int(r["metadata"]["resourceVersion"]) for r in results]  # type: ignore[index]
        assert versions == sorted(versions) and len(set(versions)) == 200
        seen = []
        for event in watch:
            assert event.type == "ADDED"
            seen.append(event.object["metadata"]["name"])
            if len(seen) == 200:
                break
        assert seen == [f"p{i:03d}" for i in range(200)]
    finally:
        watch.stop()


def test_a_node_may_not_create_pods(cluster: Cluster, client: GrpcApiClient) -> None:
    assert cluster.server.authority is not None
    node_client = cluster.client(cluster.server.authority.node_token("node-1"))
    try:
        (result,) = node_client.create_many([("Pod", pod("p"), "default")])
    finally:
        node_client.close()
    assert isinstance(result, Forbidden)
