"""Watch semantics over real gRPC, against SQLite and etcd."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import ClientConfig
from controlplane.client.errors import Gone, Invalid
from controlplane.client.interface import ListOptions, WatchEvent
from tests.fakes.api_objects import pod
from tests.harness.apiserver import Cluster
from tests.harness.wait import wait_for
from tests.harness.watch_collector import Collector


def summary(events: list[WatchEvent]) -> list[tuple[str, str]]:
    return [(e.type, e.object["metadata"]["name"]) for e in events]


def rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


def test_events_in_order_with_resource_versions(client: GrpcApiClient) -> None:
    start = client.list("Pod", "default").resource_version
    watch = client.watch("Pod", "default", ListOptions(resource_version=start))
    got = Collector(iter(watch))
    a = client.create("Pod", pod("a"), "default")
    a2 = client.patch("Pod", "a", {"metadata": {"labels": {"x": "1"}}}, "default")
    client.create("Pod", pod("b"), "default")
    client.delete("Pod", "a", "default")
    events = got.wait(4)
    watch.stop()
    assert summary(events) == [("ADDED", "a"), ("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "a")]
    revs = [rv(e.object) for e in events]
    assert revs == sorted(revs) and len(set(revs)) == 4
    assert revs[0] == rv(a) and revs[1] == rv(a2)
    assert events[3].object["metadata"]["labels"] == {"x": "1"}  # last state of a


def test_resume_from_an_older_version_replays_history(client: GrpcApiClient) -> None:
    first = client.create("ConfigMap", {"metadata": {"name": "one"}}, "default")
    client.create("ConfigMap", {"metadata": {"name": "two"}}, "default")
    client.patch("ConfigMap", "one", {"data": {"k": "v"}}, "default")
    watch = client.watch("ConfigMap", "default", ListOptions(resource_version=str(rv(first))))
    got = Collector(iter(watch))
    assert summary(got.wait(2)) == [("ADDED", "two"), ("MODIFIED", "one")]
    client.create("ConfigMap", {"metadata": {"name": "three"}}, "default")
    assert summary(got.wait(3))[-1] == ("ADDED", "three")
    watch.stop()
    got.ended.wait(5)
    assert got.error is None


def test_watch_from_now_and_namespace_scope(client: GrpcApiClient) -> None:
    client.create("Namespace", {"metadata": {"name": "other"}})
    client.create("ConfigMap", {"metadata": {"name": "before"}}, "default")
    watch = client.watch("ConfigMap", "default")
    got = Collector(iter(watch))
    client.create("ConfigMap", {"metadata": {"name": "elsewhere"}}, "other")
    client.create("ConfigMap", {"metadata": {"name": "after"}}, "default")
    assert summary(got.wait(1)) == [("ADDED", "after")]
    watch.stop()


def test_bookmarks_carry_progress(client: GrpcApiClient) -> None:
    client.create("Namespace", {"metadata": {"name": "other"}})
    watch = client.watch("ConfigMap", "default", allow_bookmarks=True)
    got = Collector(iter(watch))
    latest = client.create("ConfigMap", {"metadata": {"name": "x"}}, "other")

    def bookmarked() -> bool:
        return any(e.type == "BOOKMARK" and rv(e.object) >= rv(latest) for e in list(got.events))

    from tests.harness.wait import wait_for

    wait_for(bookmarked, timeout=10, message="a bookmark at or past the last write")
    watch.stop()


def test_gone_past_retained_history(cluster: Cluster, client: GrpcApiClient) -> None:
    old = client.create("ConfigMap", {"metadata": {"name": "c"}}, "default")
    for i in range(5):
        client.patch("ConfigMap", "c", {"data": {"i": str(i)}}, "default")
    cluster.store.compact(cluster.store.current_revision() - 1)
    with pytest.raises(Gone, match="relist"):
        client.watch("ConfigMap", "default", ListOptions(resource_version=str(rv(old))))
    with pytest.raises(Invalid):
        client.watch("ConfigMap", "default", ListOptions(resource_version="abc"))


def test_selectors_turn_transitions_into_added_and_deleted(client: GrpcApiClient) -> None:
    watch = client.watch("Pod", None, ListOptions(field_selector="spec.nodeName=n1"))
    got = Collector(iter(watch))
    client.create("Pod", pod("p"), "default")
    client.create("Pod", pod("other", node="n2"), "default")
    client.patch("Pod", "p", {"spec": {"nodeName": "n1"}}, "default")  # bound: now matches
    client.patch("Pod", "p", {"status": {"phase": "Running"}}, "default", "status")
    client.delete("Pod", "p", "default")
    events = got.wait(3)
    assert summary(events) == [("ADDED", "p"), ("MODIFIED", "p"), ("MODIFIED", "p")]
    assert events[2].object["metadata"]["deletionTimestamp"]
    client.delete("Pod", "p", "default", options=None)  # graceful: still there
    from controlplane.client.interface import DeleteOptions

    client.delete("Pod", "p", "default", DeleteOptions(grace_period_seconds=0))
    assert summary(got.wait(4))[-1] == ("DELETED", "p")
    labels = client.watch("Pod", "default", ListOptions(label_selector="app=web"))
    by_label = Collector(iter(labels))
    client.create("Pod", pod("q"), "default")
    client.patch("Pod", "q", {"metadata": {"labels": {"app": "web"}}}, "default")
    client.patch("Pod", "q", {"metadata": {"labels": {"app": "db"}}}, "default")
    assert summary(by_label.wait(2)) == [("ADDED", "q"), ("DELETED", "q")]
    watch.stop()
    labels.stop()


def test_many_concurrent_writers_and_watchers_see_every_event(client: GrpcApiClient) -> None:
    start = client.list("ConfigMap", "default").resource_version
    watches = [client.watch("ConfigMap", "default", ListOptions(resource_version=start))
               for _ in range(5)]  # fmt: skip
    collectors = [Collector(iter(w)) for w in watches]

    def writer(i: int) -> None:
        for j in range(20):
            client.create("ConfigMap", {"metadata": {"name": f"w{i}-{j}"}}, "default")

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in collectors:
        events = c.wait(100)
        revs = [rv(e.object) for e in events]
        assert revs == sorted(revs) and len(set(revs)) == 100
    for w in watches:
        w.stop()


def test_node_watchers_get_their_own_pods_and_the_transitions(
    cluster: Cluster, client: GrpcApiClient
) -> None:
    # Watchers of spec.nodeName=NODE are indexed by node; what each receives
    # must be what its selector says, unbound pods included (nodeName "").
    def watch(selector: str) -> tuple[Any, Collector]:
        w = client.watch("Pod", None, ListOptions(field_selector=selector), allow_bookmarks=False)
        return w, Collector(iter(w))

    before = cluster.server.broadcaster.watcher_count()
    (w1, n1), (w2, n2), (wu, unbound), (wb, bound) = (
        watch("spec.nodeName=n1"), watch("spec.nodeName==n2"), watch("spec.nodeName="),
        watch("spec.nodeName!="),
    )  # fmt: skip
    assert cluster.server.broadcaster.watcher_count() == before + 4
    client.create("Pod", pod("p"), "default")
    client.create("Pod", pod("q", node="n2"), "default")
    client.patch("Pod", "p", {"spec": {"nodeName": "n1"}}, "default")
    client.patch("Pod", "q", {"metadata": {"labels": {"x": "y"}}}, "default")
    assert summary(unbound.wait(2)) == [("ADDED", "p"), ("DELETED", "p")]
    assert summary(n1.wait(1)) == [("ADDED", "p")]
    assert summary(n2.wait(2)) == [("ADDED", "q"), ("MODIFIED", "q")]
    client.create("Pod", pod("r", node="n1"), "default")
    assert summary(n1.wait(2)) == [("ADDED", "p"), ("ADDED", "r")]
    assert len(n2.real()) == 2 and len(unbound.real()) == 2
    # spec.nodeName!= (the bound pods): p once bound, q from its creation.
    assert summary(bound.wait(4)) == [("ADDED", "q"), ("ADDED", "p"), ("MODIFIED", "q"),
                                      ("ADDED", "r")]  # fmt: skip
    for w in (w1, w2, wu, wb):
        w.stop()
    wait_for(lambda: cluster.server.broadcaster.watcher_count() == before, timeout=10)
    broadcaster = cluster.server.broadcaster
    assert not broadcaster._by_node and not broadcaster._by_other_node  # no empty groups kept


def test_lean_watch_omits_managed_fields_only_for_the_client_that_asks(cluster: Cluster) -> None:
    """A component's caches never read managedFields: its watches get the
    objects without them (live and replayed), and every other watcher, and
    the stored object, keep them."""
    plain = cluster.client()
    assert cluster.server.authority is not None
    lean = connect(
        ClientConfig(cluster.address, cluster.pki.ca_pem, cluster.server.authority.admin_token()),
        timeout=10,
        lean_watches=True,
    )
    try:
        start = plain.list("Pod", "default").resource_version
        full_watch = plain.watch("Pod", "default", ListOptions(resource_version=start))
        lean_watch = lean.watch("Pod", "default", ListOptions(resource_version=start))
        full, slim = Collector(iter(full_watch)), Collector(iter(lean_watch))
        plain.create("Pod", pod("a"), "default")
        plain.patch("Pod", "a", {"metadata": {"labels": {"x": "1"}}}, "default")
        full_events, slim_events = full.wait(2), slim.wait(2)
        replayed_watch = lean.watch("Pod", "default", ListOptions(resource_version=start))
        replayed = Collector(iter(replayed_watch)).wait(2)
        for w in (full_watch, lean_watch, replayed_watch):
            w.stop()
        assert all("managedFields" in e.object["metadata"] for e in full_events)
        for got in (slim_events, replayed):
            assert [e.object["metadata"].get("managedFields") for e in got] == [None, None]
            assert summary(got) == summary(full_events)
            assert got[1].object["metadata"]["labels"] == {"x": "1"}
            assert [rv(e.object) for e in got] == [rv(e.object) for e in full_events]
        assert "managedFields" in plain.get("Pod", "a", "default")["metadata"]
    finally:
        lean.close()


def test_omit_managed_fields_refuses_a_value_other_than_true_or_false(
    client: GrpcApiClient,
) -> None:
    client._watch_metadata = (*client._metadata, ("omit-managed-fields", "yes"))
    with pytest.raises(Invalid, match="omit-managed-fields: must be true or false, not 'yes'"):
        client.watch("Pod", "default")
