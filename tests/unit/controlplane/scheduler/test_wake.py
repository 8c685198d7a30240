"""A scheduler's term sleeps until its first work (wake.py); meanwhile the
batch scheduler's Queues read as an idle session writes them."""

from __future__ import annotations

import threading
from typing import Any

from controlplane.client.informer import SharedInformerFactory
from controlplane.scheduler.batch.queuestatus import idle_status, queue_status
from controlplane.scheduler.batch.run import ApiBatchWriter, IdleQueues
from controlplane.scheduler.wake import wait_for_work
from machinery.clock import FakeClock
from tests.fakes.fake_apiclient import FakeApiClient
from tests.harness.wait import wait_for


def obj(name: str, **rest: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, **rest}


class Waiter:
    """wait_for_work on a thread of its own, its answer kept."""

    def __init__(self, client: FakeApiClient, kinds: tuple[str, ...]) -> None:
        self.factory = SharedInformerFactory(client, clock=FakeClock())
        self.stop = threading.Event()
        self.answer: bool | None = None
        self.thread = threading.Thread(target=self._run, args=(kinds,), daemon=True)

    def _run(self, kinds: tuple[str, ...]) -> None:
        self.answer = wait_for_work(self.factory, kinds, self.stop)

    def __enter__(self) -> Waiter:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)
        self.factory.shutdown()


def test_sleeps_with_one_watch_until_the_first_object() -> None:
    client = FakeApiClient(clock=FakeClock())
    client.create("Node", obj("n1"))
    with Waiter(client, ("Pod", "PodGroup")) as w:
        wait_for(lambda: all(i.has_synced() for i in w.factory.informers()))
        # Synced with no Pod and no PodGroup: still waiting, watching only those.
        assert w.thread.is_alive() and w.answer is None
        assert client.open_watches("Pod") == 1 and client.open_watches("PodGroup") == 1
        assert client.open_watches("Node") == 0
        client.create("PodGroup", obj("g", spec={"minMember": 1}), "default")
        w.thread.join(5)
        assert w.answer is True
        # Its own handler is gone; the informers stay for the scheduler.
        assert all(not i._handlers for i in w.factory.informers())
        assert client.open_watches("Pod") == 1


def test_an_object_there_at_start_wakes_it_at_once() -> None:
    client = FakeApiClient(clock=FakeClock())
    client.create("Pod", obj("p", spec={"containers": []}), "default")
    with Waiter(client, ("Pod",)) as w:
        w.thread.join(5)
        assert w.answer is True


def test_stop_ends_the_wait() -> None:
    client = FakeApiClient(clock=FakeClock())
    with Waiter(client, ("Pod",)) as w:
        wait_for(lambda: all(i.has_synced() for i in w.factory.informers()))
        w.stop.set()
        w.thread.join(5)
        assert w.answer is False
        # Its informers stopped with it: a component's stop waited out its
        # whole grace for their threads when a scheduler was stopped idle.
        assert client.open_watches("Pod") == 0
        assert all(i.reflector.stopped() for i in w.factory.informers())


def test_idle_status_is_what_a_session_writes_of_an_empty_queue() -> None:
    assert idle_status() == {
        "pending": 0, "running": 0, "inqueue": 0, "completed": 0, "unknown": 0,
        "allocated": {"cpu": "0m"},
    }  # fmt: skip
    assert queue_status({"running": 2, "pending": 0}, {"cpu": 1500, "memory": 2**30}) == {
        "pending": 0, "running": 2, "inqueue": 0, "completed": 0, "unknown": 0,
        "allocated": {"cpu": "1500m", "memory": str(2**30)},
    }  # fmt: skip


def test_idle_queues_get_the_idle_status_once() -> None:
    client = FakeApiClient(clock=FakeClock())
    client.create("Queue", obj("default", spec={"weight": 1}))
    client.create("Queue", obj("done", spec={"weight": 1}))
    client.update_status("Queue", client.get("Queue", "done") | {"status": idle_status()})
    stale = {**idle_status(), "running": 3, "state": "Open"}
    client.create("Queue", obj("stale", spec={"weight": 1}))
    client.update_status("Queue", client.get("Queue", "stale") | {"status": stale})
    factory = SharedInformerFactory(client, clock=FakeClock())
    try:
        with IdleQueues(ApiBatchWriter(client), factory) as idle:
            factory.start()
            assert factory.wait_for_cache_sync(5)
            idle.report()
            patched = sorted(c.name for c in client.calls_of("patch", "Queue"))
            assert patched == ["default", "stale"]
            assert client.get("Queue", "default")["status"] == idle_status()
            assert client.get("Queue", "stale")["status"] == {**idle_status(), "state": "Open"}
            # Nothing changed since: nothing written.
            idle.changed.clear()
            idle.report()
            assert len(client.calls_of("patch", "Queue")) == 2
    finally:
        factory.shutdown()
