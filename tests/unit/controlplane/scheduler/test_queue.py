"""The scheduling queue with a fake clock: order, backoff, requeue on events, DRF."""

from __future__ import annotations

from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.queue import SchedulingQueue
from controlplane.scheduler.types import NODE_ADD, NODE_UPDATE, POD_DELETE
from machinery.clock import FakeClock
from tests.fakes.scheduler_objects import make_pod


def key(pod: PodInfo, added: float) -> tuple[int, float]:
    return (-pod.priority, pod.created or added)


def info(
    name: str, priority: int = 0, namespace: str = "default", created: str | None = None
) -> PodInfo:
    return PodInfo.of(make_pod(name, priority=priority, namespace=namespace, created=created))


def make(clock: FakeClock, **kw: object) -> SchedulingQueue:
    events = {"NodeResourcesFit": [NODE_ADD, POD_DELETE], "NodeAffinity": [NODE_ADD, NODE_UPDATE]}
    return SchedulingQueue(key, clock, plugin_events=events, **kw)  # type: ignore[arg-type]


def drain(q: SchedulingQueue) -> list[str]:
    out = []
    while (qp := q.pop(block=False)) is not None:
        out.append(qp.info.name)
    return out


def test_priority_then_creation_order() -> None:
    clock = FakeClock()
    q = make(clock)
    q.add(info("late-low", 0, created="2024-01-01T00:00:05Z"))
    q.add(info("early-low", 0, created="2024-01-01T00:00:01Z"))
    q.add(info("high", 100, created="2024-01-01T00:00:09Z"))
    assert drain(q) == ["high", "early-low", "late-low"]


def test_fifo_by_arrival_without_timestamps() -> None:
    clock = FakeClock()
    q = make(clock)
    for name in ["a", "b", "c"]:
        q.add(info(name))
        clock.step(1)
    assert drain(q) == ["a", "b", "c"]


def test_exponential_backoff_per_pod() -> None:
    clock = FakeClock()
    q = make(clock, initial_backoff=1.0, max_backoff=4.0)
    assert [q.backoff_duration(n) for n in range(1, 6)] == [1, 2, 4, 4, 4]
    q.add(info("p"))
    qp = q.pop(block=False)
    assert qp is not None and qp.attempts == 1
    q.move_on_event(NODE_ADD)  # something changed during its cycle -> backoffQ
    q.add_unschedulable(qp, {"NodeResourcesFit"})
    assert q.pop(block=False) is None
    clock.step(0.9)
    assert q.pop(block=False) is None
    clock.step(0.2)
    qp = q.pop(block=False)
    assert qp is not None and qp.attempts == 2
    q.add_backoff(qp)
    clock.step(1.5)
    assert q.pop(block=False) is None
    clock.step(0.6)
    assert q.pop(block=False) is not None


def test_unschedulable_pool_moves_only_on_relevant_events() -> None:
    clock = FakeClock()
    q = make(clock)
    q.add(info("cpu"))
    q.add(info("affinity"))
    cpu, aff = q.pop(block=False), q.pop(block=False)
    assert cpu is not None and aff is not None
    q.add_unschedulable(cpu, {"NodeResourcesFit"})
    q.add_unschedulable(aff, {"NodeAffinity"})
    assert set(q.pending()["unschedulable"]) == {"default/cpu", "default/affinity"}
    assert q.move_on_event(POD_DELETE) == 1  # frees resources, does not change labels
    assert q.pending()["unschedulable"] == ["default/affinity"]
    # Still within backoff: it waits in backoffQ, then becomes active.
    assert q.pop(block=False) is None
    clock.step(1.0)
    got = q.pop(block=False)
    assert got is not None and got.info.name == "cpu"
    assert q.move_on_event(NODE_UPDATE) == 1
    clock.step(1.0)
    got = q.pop(block=False)
    assert got is not None and got.info.name == "affinity"


def test_unschedulable_pods_are_retried_eventually() -> None:
    clock = FakeClock()
    q = make(clock, max_unschedulable_seconds=300)
    q.add(info("p"))
    qp = q.pop(block=False)
    assert qp is not None
    q.add_unschedulable(qp, {"NodeAffinity"})
    clock.step(299)
    assert q.pop(block=False) is None
    clock.step(2)
    assert q.pop(block=False) is not None


def test_many_parked_pods_move_by_group_and_retry_oldest_first() -> None:
    clock = FakeClock()
    q = make(clock, max_unschedulable_seconds=300)
    t0 = clock.now()
    for i in range(6):
        q.add(info(f"p{i}"))
    popped = [q.pop(block=False) for _ in range(6)]
    for i, qp in enumerate(popped):
        assert qp is not None
        q.add_unschedulable(qp, {"NodeResourcesFit"} if i % 2 else {"NodeAffinity"})
        clock.step(10)
    assert q.next_deadline() == t0 + 300  # p0, parked at t0
    # A node update helps only the NodeAffinity group, all of it at once.
    assert q.move_on_event(NODE_UPDATE) == 3
    assert sorted(q.pending()["unschedulable"]) == ["default/p1", "default/p3", "default/p5"]
    assert q.next_deadline() == t0 + 310  # p1 is now the oldest parked
    q.delete("default/p1")
    assert q.next_deadline() == t0 + 330
    clock.step(t0 + 340 - clock.now())
    got = {x.info.name for x in [q.pop(block=False) for _ in range(5)] if x is not None}
    assert got == {"p0", "p2", "p4", "p3"}  # p5 (parked at t0 + 50) waits until 350
    assert q.pending()["unschedulable"] == ["default/p5"]


def test_update_of_parked_pod_requeues_it_and_delete_removes() -> None:
    clock = FakeClock()
    q = make(clock)
    q.add(info("p"))
    qp = q.pop(block=False)
    assert qp is not None
    q.add_unschedulable(qp, {"NodeAffinity"})
    clock.step(5)
    q.update(info("p", priority=5))
    got = q.pop(block=False)
    assert got is not None and got.info.priority == 5
    q.add(info("gone"))
    q.delete("default/gone")
    assert len(q) == 0


def test_next_deadline_and_blocking_pop_timeout() -> None:
    clock = FakeClock()
    q = make(clock)
    assert q.next_deadline() is None
    q.add(info("p"))
    qp = q.pop(block=False)
    assert qp is not None
    q.add_backoff(qp)
    assert q.next_deadline() == clock.now() + 1.0
    # A blocking pop with a short timeout returns None instead of spinning.
    assert q.pop(block=True, timeout=0.01) is None


def test_drf_order_prefers_namespace_with_smallest_share() -> None:
    clock = FakeClock()
    shares = {"heavy": 0.6, "light": 0.1}
    q = make(clock, drf_share=lambda ns: shares.get(ns, 0.0))
    q.add(info("h1", 100, namespace="heavy"))
    q.add(info("l1", 0, namespace="light"))
    q.add(info("l2", 0, namespace="light"))
    first = q.pop(block=False)
    assert first is not None and first.info.name == "l1"
    shares["light"] = 0.9
    second = q.pop(block=False)
    assert second is not None and second.info.name == "h1"
