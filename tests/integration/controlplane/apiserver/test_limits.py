"""Request limits (issue 16): size, depth, stored size, watches, in-flight lanes."""

from __future__ import annotations

import json
import time
from typing import Any

import grpc
import pytest

from controlplane.api.kinds import by_kind
from controlplane.api.limits import MAX_BODY, MAX_DEPTH
from controlplane.apiserver.codec import object_key
from controlplane.client.apiclient import open_channel
from controlplane.client.config import ClientConfig
from controlplane.client.errors import ApiError, Invalid
from proto.controlplane.v1 import api_pb2, api_pb2_grpc
from tests.harness.apiserver import Cluster


def nested(depth: int) -> dict[str, Any]:
    inner: dict[str, Any] = {}
    top = inner
    for _ in range(depth - 1):
        inner["a"] = {}
        inner = inner["a"]
    return top


def config_map(name: str, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, **extra}


def test_deep_and_huge_requests_are_refused_naming_the_limit(cluster: Cluster) -> None:
    with cluster.client() as admin:
        with pytest.raises(Invalid, match=f"exceeds the limit of {MAX_DEPTH}"):
            admin.create("ConfigMap", config_map("deep", x=nested(300)), "default")
        with pytest.raises(Invalid, match=f"exceeds the limit of {MAX_BODY} bytes"):
            admin.create("ConfigMap", config_map("big", data={"a": "x" * (MAX_BODY + 1000)}),
                         "default")  # fmt: skip
        with pytest.raises(ApiError):  # far past the limit: gRPC drops it undecoded
            admin.create("ConfigMap", config_map("huge", data={"a": "x" * (64 << 20)}), "default")
        # Over Kubernetes' 1 MiB of ConfigMap data, under the request limit.
        with pytest.raises(Invalid, match=r"Too long: must have at most 1048576 bytes"):
            admin.create("ConfigMap", config_map("fat", data={"a": "x" * (2 << 20)}), "default")
        admin.create("ConfigMap", config_map("ok", data={"a": "x" * 1000}), "default")
        with pytest.raises(Invalid, match="Too long"):
            admin.patch("ConfigMap", "ok", {"data": {"b": "y" * (2 << 20)}}, "default")
        assert admin.get("ConfigMap", "ok", "default")["data"] == {"a": "x" * 1000}
        # Under the request limit but over the stored-object limit (1.5 MiB):
        # a kind without a data limit of its own.
        event = {"metadata": {"name": "e"}, "message": "m" * (2 << 20),
                 "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}}  # fmt: skip
        with pytest.raises(Invalid, match=r"too large.*per stored object"):
            admin.create("Event", event, "default")


def test_an_object_too_deep_to_copy_stored_before_the_limit_stays_deletable(
    cluster: Cluster,
) -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "deep", "namespace": "default", "uid": "u1"},
           "x": nested(900)}  # fmt: skip
    raw = json.dumps(obj).encode()
    cluster.store.create(object_key(by_kind("ConfigMap"), "default", "deep"), raw)
    with cluster.client() as admin:
        assert admin.get("ConfigMap", "deep", "default")["metadata"]["name"] == "deep"
        admin.delete("ConfigMap", "deep", "default")
        assert not admin.list("ConfigMap", "default").items


@pytest.mark.slow
@pytest.mark.parametrize("cluster", ["sqlite"], indirect=True)
def test_2000_watches_from_one_identity_do_not_stop_node_heartbeats(cluster: Cluster) -> None:
    authority = cluster.server.authority
    assert authority is not None
    greedy_token = cluster.server.node_token("greedy")
    channel = open_channel(ClientConfig(cluster.address, cluster.pki.ca_pem))
    stub = api_pb2_grpc.ObjectsStub(channel)
    calls: list[Any] = []
    heartbeat = cluster.client(cluster.server.node_token("n1"))
    try:
        heartbeat.create("Lease", {"metadata": {"name": "n1"}, "spec": {"holderIdentity": "n1"}},
                         "kube-node-lease")  # fmt: skip
        request = api_pb2.WatchRequest(kind="Pod", field_selector="spec.nodeName=greedy")
        metadata = (("authorization", f"Bearer {greedy_token}"),)
        for _ in range(2000):
            calls.append(stub.Watch(request, metadata=metadata))
        for i in range(20):
            start = time.monotonic()
            heartbeat.patch("Lease", "n1", {"spec": {"leaseDurationSeconds": 40 + i}},
                            "kube-node-lease")  # fmt: skip
            assert time.monotonic() - start < 5.0, "a Lease renewal missed its deadline"
        refused = [c for c in calls if c.done() and c.code() == grpc.StatusCode.RESOURCE_EXHAUSTED]
        assert refused, "no watch was refused"
        assert "too many watches" in (refused[0].details() or "")
    finally:
        for call in calls:
            call.cancel()
        heartbeat.close()
        channel.close()
