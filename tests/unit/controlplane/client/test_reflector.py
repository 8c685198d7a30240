"""The reflector lists, watches, resumes, relists on Gone and backs off on errors."""

from __future__ import annotations

import threading
from typing import Any

from controlplane.client import errors
from controlplane.client.reflector import Backoff, Reflector
from controlplane.client.store import Store
from machinery.clock import FakeClock
from tests.fakes.fake_apiclient import FakeApiClient
from tests.harness.wait import wait_for


class StoreSink:
    def __init__(self) -> None:
        self.store = Store()
        self.log: list[tuple[str, str]] = []

    def replace(self, items: list[dict[str, Any]], resource_version: str) -> None:
        self.store.replace(items)
        self.log.append(("replace", ",".join(i["metadata"]["name"] for i in items)))

    def add(self, obj: dict[str, Any]) -> None:
        self.store.add(obj)
        self.log.append(("add", obj["metadata"]["name"]))

    def update(self, obj: dict[str, Any]) -> None:
        self.store.update(obj)
        self.log.append(("update", obj["metadata"]["name"]))

    def delete(self, obj: dict[str, Any]) -> None:
        self.store.delete(obj)
        self.log.append(("delete", obj["metadata"]["name"]))


def node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}}


class Running:
    def __init__(self, reflector: Reflector) -> None:
        self.reflector = reflector
        self.thread = threading.Thread(target=reflector.run)
        self.thread.start()

    def stop(self) -> None:
        self.reflector.stop()
        self.thread.join(5)
        assert not self.thread.is_alive()


def test_list_then_watch_then_resume_from_last_version() -> None:
    client = FakeApiClient(clock=FakeClock())
    client.create("Node", node("a"))
    sink = StoreSink()
    r = Reflector(client, "Node", sink, clock=FakeClock())
    running = Running(r)
    try:
        wait_for(lambda: client.open_watches("Node") == 1)
        assert sink.log == [("replace", "a")]
        client.create("Node", node("b"))
        client.patch("Node", "a", {"metadata": {"labels": {"x": "1"}}})
        wait_for(lambda: len(sink.log) == 3)
        client.end_watches()  # the server closes the watch
        client.delete("Node", "b")  # happens while no watch is open
        wait_for(lambda: ("delete", "b") in sink.log)
        assert r.lists == 1 and r.watches == 2  # resumed, did not relist
        assert sink.store.keys() == ["a"]
        assert r.last_sync_resource_version == client.resource_version
    finally:
        running.stop()


def test_relists_on_gone() -> None:
    client = FakeApiClient(clock=FakeClock())
    client.create("Node", node("a"))
    sink = StoreSink()
    r = Reflector(client, "Node", sink, clock=FakeClock())
    running = Running(r)
    try:
        wait_for(lambda: client.open_watches("Node") == 1)
        client.end_watches()
        client.create("Node", node("b"))
        client.compact()
        wait_for(lambda: r.lists == 2)
        wait_for(lambda: sink.store.keys() == ["a", "b"])
        assert sink.log[-1] == ("replace", "a,b")
    finally:
        running.stop()


def test_bookmark_advances_resume_version() -> None:
    client = FakeApiClient(clock=FakeClock())
    sink = StoreSink()
    r = Reflector(client, "Node", sink, clock=FakeClock())
    running = Running(r)
    try:
        wait_for(lambda: client.open_watches("Node") == 1)
        client.create("Pod", {"metadata": {"name": "p"}}, "default")  # other kind
        client.bookmark("Node")
        wait_for(lambda: r.last_sync_resource_version == client.resource_version)
        client.end_watches()
        client.compact()  # history gone, but the bookmark kept us current
        wait_for(lambda: r.watches == 2 and client.open_watches("Node") == 1)
        assert r.lists == 1
    finally:
        running.stop()


def test_backs_off_exponentially_on_errors_then_recovers() -> None:
    clock = FakeClock()
    client = FakeApiClient(clock=clock)
    client.create("Node", node("a"))
    client.fail("list", errors.Unavailable("down"), times=3)
    sink = StoreSink()
    r = Reflector(client, "Node", sink, clock=clock, backoff=Backoff(1.0, 3.0))
    running = Running(r)
    try:
        delays = []
        for i in range(3):
            calls = i + 1
            wait_for(lambda: len(client.calls_of("list")) == calls and clock.waiters() == 1)  # noqa: B023
            delays.append(r.current_backoff)
            assert sink.log == []
            clock.step(r.current_backoff)
        assert delays == [1.0, 2.0, 3.0]
        wait_for(lambda: client.open_watches("Node") == 1)
        assert sink.log == [("replace", "a")] and r.current_backoff == 0.0
    finally:
        running.stop()


def test_stop_event_ends_run() -> None:
    client = FakeApiClient(clock=FakeClock())
    r = Reflector(client, "Node", StoreSink(), clock=FakeClock())
    stop = threading.Event()
    t = threading.Thread(target=r.run, args=(stop,))
    t.start()
    wait_for(lambda: client.open_watches("Node") == 1)
    stop.set()
    t.join(5)
    assert not t.is_alive() and client.open_watches() == 0


def test_backs_off_when_the_server_keeps_closing_empty_watches() -> None:
    clock = FakeClock()
    client = FakeApiClient(clock=clock)
    sink = StoreSink()
    r = Reflector(client, "Node", sink, clock=clock, backoff=Backoff(1.0, 8.0))
    running = Running(r)
    try:
        for _ in range(3):
            wait_for(lambda: client.open_watches("Node") == 1)
            client.end_watches()
        wait_for(lambda: clock.waiters() == 1)  # sleeping instead of spinning
        assert r.watches == 3 and r.current_backoff == 1.0
        clock.step(1.0)
        wait_for(lambda: client.open_watches("Node") == 1)
        client.create("Node", node("a"))
        wait_for(lambda: sink.store.keys() == ["a"])
        assert r.current_backoff == 0.0
    finally:
        running.stop()
