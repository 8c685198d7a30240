"""The pods/binding subresource (batched Bind), against SQLite and etcd."""

from __future__ import annotations

from typing import Any

from controlplane.client.apiclient import Binding, GrpcApiClient
from controlplane.client.errors import Conflict, Forbidden, Invalid, NotFound
from controlplane.client.interface import ListOptions
from tests.harness.apiserver import Cluster


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]},
    }


def test_bind_sets_node_and_annotations_like_a_merge_patch(client: GrpcApiClient) -> None:
    a = client.create("Pod", pod("a"), "default")
    client.create("Pod", pod("b"), "default")
    results = client.bind(
        [
            Binding("default", "a", "node-1", a["metadata"]["uid"], {"scheduler/score": "7"}),
            Binding("default", "b", "node-2"),
        ]
    )
    assert not any(isinstance(r, Exception) for r in results)
    bound_a, bound_b = client.get("Pod", "a", "default"), client.get("Pod", "b", "default")
    assert bound_a["spec"]["nodeName"] == "node-1"
    assert bound_a["metadata"]["annotations"] == {"scheduler/score": "7"}
    assert bound_b["spec"]["nodeName"] == "node-2"
    assert str(results[0]) == bound_a["metadata"]["resourceVersion"]
    # What the old merge-patch bind stored, field for field, but for
    # managedFields: as in Kubernetes, a binding records no entry (the
    # creator's stays as it was), where a patch records its manager's.
    created_c = client.create("Pod", pod("c"), "default")
    patched = client.patch("Pod", "c", {"spec": {"nodeName": "node-1"}}, "default")
    assert bound_a["metadata"]["managedFields"] == a["metadata"]["managedFields"]
    assert patched["metadata"]["managedFields"] != created_c["metadata"]["managedFields"]
    for obj in (bound_b, patched):
        obj["metadata"].pop("resourceVersion")
        for key in ("name", "uid", "creationTimestamp", "managedFields"):
            obj["metadata"].pop(key)
    assert bound_b["spec"].pop("nodeName") == "node-2"
    assert patched["spec"].pop("nodeName") == "node-1"
    assert bound_b == patched


def test_bind_refusals_are_per_binding(client: GrpcApiClient) -> None:
    client.create("Pod", pod("ok"), "default")
    client.create("Pod", pod("taken"), "default")
    client.bind([Binding("default", "taken", "node-1")])
    results = client.bind(
        [
            Binding("default", "taken", "node-2"),
            Binding("default", "missing", "node-1"),
            Binding("default", "ok", "node-1", uid="not-the-uid"),
            Binding("default", "ok", ""),
            Binding("default", "ok", "node-3"),
            Binding("default", "taken", "node-1"),  # already there: refused as well
        ]
    )
    assert isinstance(results[0], Conflict) and "already assigned" in str(results[0])
    assert isinstance(results[1], NotFound)
    assert isinstance(results[2], Conflict)
    assert isinstance(results[3], Invalid)
    assert not isinstance(results[4], Exception)
    assert isinstance(results[5], Conflict)
    assert client.get("Pod", "ok", "default")["spec"]["nodeName"] == "node-3"


def test_a_pod_assigned_to_a_node_is_never_bound_again_even_to_that_node(
    client: GrpcApiClient,
) -> None:
    """Kubernetes' BindingREST refuses any binding of a pod whose
    spec.nodeName is set (409 on pods/binding), the same node too: a
    scheduler that retries a bind learns the pod is taken, never that its
    retry "worked"."""
    created = client.create("Pod", pod("once"), "default")
    (first,) = client.bind([Binding("default", "once", "node-1", annotations={"a": "1"})])
    assert not isinstance(first, Exception)
    again = client.bind(
        [
            Binding("default", "once", "node-1"),
            Binding("default", "once", "node-1", created["metadata"]["uid"], {"a": "2"}),
            Binding("default", "once", "node-2"),
        ]
    )
    for refused in again:
        assert isinstance(refused, Conflict) and not refused.retry_after
        assert str(refused) == (
            'Operation cannot be fulfilled on pods/binding "once": '
            'pod once is already assigned to node "node-1"'
        )
    stored = client.get("Pod", "once", "default")
    assert stored["metadata"]["resourceVersion"] == str(first)
    assert stored["metadata"]["annotations"] == {"a": "1"}


def test_bind_of_a_gated_pod_is_refused(client: GrpcApiClient) -> None:
    gated = pod("gated")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    client.create("Pod", gated, "default")
    (result,) = client.bind([Binding("default", "gated", "node-1")])
    assert isinstance(result, Conflict)
    assert str(result) == (
        'Operation cannot be fulfilled on pods/binding "gated": '
        "pod gated has non-empty .spec.schedulingGates"
    )
    assert not client.get("Pod", "gated", "default")["spec"].get("nodeName")


def test_bind_of_a_terminating_pod_is_refused(client: GrpcApiClient) -> None:
    p = pod("fin")
    p["metadata"]["finalizers"] = ["example.com/hold"]
    client.create("Pod", p, "default")
    client.delete("Pod", "fin", "default")
    (result,) = client.bind([Binding("default", "fin", "node-1")])
    assert isinstance(result, Conflict)
    assert str(result) == (
        'Operation cannot be fulfilled on pods/binding "fin": '
        "pod fin is being deleted, cannot be assigned to a host"
    )


def test_bind_needs_admin(cluster: Cluster, client: GrpcApiClient) -> None:
    client.create("Pod", pod("p"), "default")
    assert cluster.server.authority is not None
    node_client = cluster.client(cluster.server.node_token("node-1"))
    try:
        (result,) = node_client.bind([Binding("default", "p", "node-1")])
    finally:
        node_client.close()
    assert isinstance(result, Forbidden)


def test_many_binds_in_one_call(client: GrpcApiClient) -> None:
    for i in range(50):
        client.create("Pod", pod(f"p{i}"), "default")
    results = client.bind([Binding("default", f"p{i}", f"n{i % 3}") for i in range(50)])
    assert not any(isinstance(r, Exception) for r in results)
    assert len(set(results)) == 50
    pods = client.list("Pod", "default").items
    assert sorted(p["spec"]["nodeName"] for p in pods) == sorted(f"n{i % 3}" for i in range(50))


def test_scheduler_binder_coalesces_concurrent_binds(client: GrpcApiClient) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from controlplane.scheduler.binder import ApiClusterWriter, BindError

    pods = [client.create("Pod", pod(f"s{i}"), "default") for i in range(40)]
    writer = ApiClusterWriter(client)
    calls: list[int] = []
    send = client.bind

    def counting(bindings: list[Binding]) -> list[int | Exception]:
        calls.append(len(bindings))
        return send(bindings)  # type: ignore[return-value]

    assert writer._batcher is not None
    writer._batcher._send = counting
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: writer.bind(p, "node-1", {"k": "v"}), pods))
    assert sum(calls) == 40
    for p in client.list("Pod", "default").items:
        assert p["spec"]["nodeName"] == "node-1" and p["metadata"]["annotations"] == {"k": "v"}
    try:
        writer.bind(pods[0], "node-2")
    except BindError as err:
        assert "already assigned" in str(err)
    else:
        raise AssertionError("a second bind to another node must fail")


def test_watch_gets_every_event_of_a_batched_bind_in_order(client: GrpcApiClient) -> None:
    for i in range(30):
        client.create("Pod", pod(f"w{i}"), "default")
    start = client.list("Pod", "default").resource_version
    watch = client.watch("Pod", "default", ListOptions(resource_version=start), False)
    try:
        client.bind([Binding("default", f"w{i}", "node-1") for i in range(30)])
        seen: list[tuple[str, int, str]] = []
        for event in watch:
            meta = event.object["metadata"]
            seen.append((event.type, int(meta["resourceVersion"]), meta["name"]))
            if len(seen) == 30:
                break
    finally:
        watch.stop()
    assert [t for t, _, _ in seen] == ["MODIFIED"] * 30
    assert [r for _, r, _ in seen] == sorted(r for _, r, _ in seen)
    assert sorted(n for _, _, n in seen) == sorted(f"w{i}" for i in range(30))
