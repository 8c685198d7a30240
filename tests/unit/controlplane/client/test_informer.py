"""Shared informers: handlers, late subscribers, resync, the factory."""

from __future__ import annotations

from typing import Any

from controlplane.client.informer import SharedInformer, SharedInformerFactory
from controlplane.client.store import pod_node_index
from machinery.clock import FakeClock
from tests.fakes.fake_apiclient import FakeApiClient
from tests.harness.wait import wait_for


def pod(name: str, node: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"nodeName": node} if node else {}}


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def add(self, obj: dict[str, Any]) -> None:
        self.events.append(("add", obj["metadata"]["name"]))

    def update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        same = old["metadata"]["resourceVersion"] == new["metadata"]["resourceVersion"]
        self.events.append(("resync" if same else "update", new["metadata"]["name"]))

    def delete(self, obj: dict[str, Any]) -> None:
        self.events.append(("delete", obj["metadata"]["name"]))

    def attach(self, informer: SharedInformer) -> None:
        informer.add_event_handler(self.add, self.update, self.delete)


def test_handlers_see_list_then_events_and_store_is_indexed() -> None:
    client = FakeApiClient(clock=FakeClock())
    client.create("Pod", pod("a", "n1"), "default")
    informer = SharedInformer(client, "Pod", clock=FakeClock(), indexers={"node": pod_node_index})
    rec = Recorder()
    rec.attach(informer)
    informer.start()
    try:
        assert informer.wait_for_sync(5)
        wait_for(lambda: client.open_watches("Pod") == 1)
        client.create("Pod", pod("b", "n1"), "default")
        client.patch("Pod", "a", {"spec": {"nodeName": "n2"}}, "default")
        client.delete("Pod", "b", "default")
        wait_for(lambda: len(rec.events) == 4)
        assert rec.events == [("add", "a"), ("add", "b"), ("update", "a"), ("delete", "b")]
        assert [o["metadata"]["name"] for o in informer.store.by_index("node", "n2")] == ["a"]
        assert informer.store.by_index("node", "n1") == []
    finally:
        informer.stop()
    assert client.open_watches() == 0


def test_late_handler_gets_existing_objects_and_failing_handler_is_isolated() -> None:
    client = FakeApiClient(clock=FakeClock())
    client.create("Node", {"metadata": {"name": "n1"}})
    informer = SharedInformer(client, "Node", clock=FakeClock())

    def broken(obj: dict[str, Any]) -> None:
        raise RuntimeError("bug in handler")

    informer.add_event_handler(on_add=broken)
    informer.start()
    try:
        assert informer.wait_for_sync(5)
        rec = Recorder()
        rec.attach(informer)
        assert rec.events == [("add", "n1")]
        wait_for(lambda: client.open_watches("Node") == 1)
        client.create("Node", {"metadata": {"name": "n2"}})
        wait_for(lambda: rec.events == [("add", "n1"), ("add", "n2")])
    finally:
        informer.stop()


def test_periodic_resync_on_clock() -> None:
    clock = FakeClock()
    client = FakeApiClient(clock=clock)
    client.create("Node", {"metadata": {"name": "n1"}})
    informer = SharedInformer(client, "Node", clock=clock, resync_period=30)
    rec = Recorder()
    rec.attach(informer)
    informer.start()
    try:
        assert informer.wait_for_sync(5)
        clock.step(29)
        assert rec.events == [("add", "n1")]
        clock.step(1)
        assert rec.events == [("add", "n1"), ("resync", "n1")]
        clock.step(30)
        assert rec.events[-1] == ("resync", "n1") and len(rec.events) == 3
    finally:
        informer.stop()
    clock.step(60)
    assert len(rec.events) == 3


def test_relist_diffs_into_handler_calls() -> None:
    client = FakeApiClient(clock=FakeClock())
    client.create("Node", {"metadata": {"name": "keep"}})
    client.create("Node", {"metadata": {"name": "gone"}})
    informer = SharedInformer(client, "Node", clock=FakeClock())
    rec = Recorder()
    rec.attach(informer)
    informer.start()
    try:
        wait_for(lambda: client.open_watches("Node") == 1)
        client.end_watches()
        client.delete("Node", "gone")
        client.create("Node", {"metadata": {"name": "new"}})
        client.compact()
        wait_for(lambda: informer.reflector.lists == 2 and len(rec.events) >= 5)
        assert sorted(rec.events[2:]) == [("add", "new"), ("delete", "gone"), ("resync", "keep")]
    finally:
        informer.stop()


def test_factory_shares_one_watch_per_kind() -> None:
    client = FakeApiClient(clock=FakeClock())
    factory = SharedInformerFactory(client, clock=FakeClock())
    pods1 = factory.informer_for("Pod")
    pods2 = factory.informer_for("Pod")
    nodes = factory.informer_for("Node")
    scoped = factory.informer_for("Pod", namespace="kube-system")
    assert pods1 is pods2 and pods1 is not scoped
    a, b = Recorder(), Recorder()
    a.attach(pods1)
    b.attach(pods2)
    factory.start()
    try:
        assert factory.wait_for_cache_sync(5)
        assert all(i.has_synced() for i in (pods1, nodes, scoped))
        wait_for(lambda: client.open_watches("Pod") == 2 and client.open_watches("Node") == 1)
        client.create("Pod", pod("x"), "default")
        wait_for(lambda: a.events == [("add", "x")] and b.events == [("add", "x")])
    finally:
        factory.shutdown()
    assert client.open_watches() == 0
