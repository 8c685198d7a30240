"""Failed binds: a pod gone meanwhile is dropped, not retried every session.
Binds written in the background: the next session places pods meanwhile."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

from controlplane.client.errors import Conflict, NotFound
from controlplane.scheduler.binder import ApiClusterWriter
from machinery.clock import FakeClock
from tests.harness.wait import wait_for

from .harness import Cluster, Env

Obj = dict[str, Any]


class Refusing(Cluster):
    """Binds pods as the harness does, except those named in `refuse`: its
    function runs (what happened meanwhile) and its error is returned, nothing bound."""

    def __init__(self) -> None:
        super().__init__()
        self.refuse: dict[str, Callable[[], Exception]] = {}
        self.asked: list[str] = []

    def bind_many(
        self, items: list[tuple[Obj, str, dict[str, str] | None]]
    ) -> list[Exception | None]:
        out: list[Exception | None] = []
        for item in items:
            name = item[0]["metadata"]["name"]
            self.asked.append(name)
            refuse = self.refuse.get(name)
            out.append(refuse() if refuse is not None else super().bind_many([item])[0])
        return out


def _env() -> tuple[Env, Refusing]:
    env = Env()
    cluster = Refusing()
    cluster.sched = env.sched
    env.sched.binder.writer = env.sched.status.writer = cluster
    env.cluster = cluster
    env.nodes(1)
    return env, cluster


def _as_api_writer_returns(err: Exception) -> Exception:
    """The error as ApiClusterWriter.bind_many hands it back for one refused binding."""

    class Client:
        def bind(self, bindings: list[Any]) -> list[Any]:
            return [err for _ in bindings]

    writer = ApiClusterWriter(Client())  # type: ignore[arg-type]
    (out,) = writer.bind_many([({"metadata": {"name": "p", "uid": "u"}}, "n0", None)])
    assert out is not None
    return out


def test_a_pod_deleted_before_its_bind_is_dropped() -> None:
    env, cluster = _env()
    env.job("j", 2, min_member=1)
    gone = _as_api_writer_returns(NotFound('pods "j-t-1" not found'))
    cluster.refuse["j-t-1"] = lambda: gone
    env.run(1)
    assert "default/j-t-1" not in env.sched.cache.pending  # its DELETED event may come later
    env.run(3)
    assert cluster.asked.count("j-t-1") == 1 and list(env.bound()) == ["default/j-t-0"]


def test_a_pod_made_again_under_its_name_is_bound_not_the_old_one() -> None:
    env, cluster = _env()
    env.job("j", 1)
    old = env.sched.cache.pending["default/j-t-0"].pod

    def recreated() -> Exception:
        del cluster.refuse["j-t-0"]
        env.sched.cache.on_pod(old, deleted=True)
        again = copy.deepcopy(old)
        again["metadata"]["uid"] = "uid-again"
        env.sched.cache.on_pod(again)
        return Conflict("Precondition failed: UID in precondition: x, UID in object meta: y")

    cluster.refuse["j-t-0"] = recreated
    env.run(1)
    assert env.sched.cache.pending["default/j-t-0"].uid == "uid-again"
    env.run(1)
    assert env.cluster.pods["default/j-t-0"]["metadata"]["uid"] == "uid-again"


def test_a_bind_that_failed_for_another_reason_is_retried() -> None:
    env, cluster = _env()
    env.job("j", 1)
    # The server's retryable Conflict carries retry advice (too many concurrent writers).
    busy = _as_api_writer_returns(
        Conflict('pods "j-t-0": too many concurrent writers, try again', retry_after=1)
    )
    cluster.refuse["j-t-0"] = lambda: busy
    env.run(1)
    assert "default/j-t-0" in env.sched.cache.pending
    del cluster.refuse["j-t-0"]
    env.run(1)
    assert "default/j-t-0" in env.bound()


class Unheard(Refusing):
    """Binds succeed but their events never reach the scheduler."""

    def bind_many(
        self, items: list[tuple[Obj, str, dict[str, str] | None]]
    ) -> list[Exception | None]:
        self.asked.extend(item[0]["metadata"]["name"] for item in items)
        return [None] * len(items)


def test_a_bind_never_confirmed_is_forgotten_after_the_ttl_and_tried_again() -> None:
    clock = FakeClock()
    env = Env(clock=clock)
    cluster = Unheard()
    cluster.sched = env.sched
    env.sched.binder.writer = env.sched.status.writer = env.cluster = cluster
    env.nodes(1, cpu="1")
    env.job("j", 1)
    env.run(1)
    clock.step(env.sched.cache.cluster.assumed_ttl - 1)
    env.run(2)
    assert cluster.asked == ["j-t-0"]  # still assumed: its room held, not asked again
    assert env.sched.cache.cluster.is_assumed("default/j-t-0")
    clock.step(2)
    env.run(1)
    assert cluster.asked == ["j-t-0", "j-t-0"]  # expired: pending again, bound again


def test_a_pod_bound_already_is_not_retried() -> None:
    env, cluster = _env()
    env.job("j", 1)
    taken = _as_api_writer_returns(
        Conflict(
            'Operation cannot be fulfilled on pods/binding "j-t-0": '
            'pod j-t-0 is already assigned to node "n9"'
        )
    )
    cluster.refuse["j-t-0"] = lambda: taken
    env.run(2)
    assert cluster.asked == ["j-t-0"]
    assert "default/j-t-0" not in env.sched.cache.pending


class Holding(Refusing):
    """Binds as Refusing does, each batch once `release` is set (an API server
    busy writing it)."""

    def __init__(self) -> None:
        super().__init__()
        self.writing = threading.Event()
        self.release = threading.Event()

    def bind_many(
        self, items: list[tuple[Obj, str, dict[str, str] | None]]
    ) -> list[Exception | None]:
        self.writing.set()
        assert self.release.wait(10), "never released"
        return super().bind_many(items)


def test_background_binds_let_the_next_session_place_pods_while_one_is_written() -> None:
    # As Volcano's cache binds from goroutines: a session hands its binds
    # over and returns; the pods stay assumed (their room taken) meanwhile.
    env = Env(background_binds=True)
    cluster = Holding()
    cluster.sched = env.sched
    env.sched.binder.writer = env.sched.status.writer = env.cluster = cluster
    try:
        env.nodes(1, cpu="2")
        env.job("a", 1)
        env.run(1)  # returns with a's bind being written
        assert cluster.writing.wait(10)
        cache = env.sched.cache
        assert cache.cluster.is_assumed("default/a-t-0") and not env.bound()
        env.job("b", 2)  # a gang of two: one CPU is a's, so it waits
        env.job("c", 1)
        cluster.refuse["c-t-0"] = lambda: Conflict("too many concurrent writers", retry_after=1)
        cache.dirty.clear()
        env.run(1)  # places c beside a, while a's bind is still being written
        assert cache.cluster.is_assumed("default/c-t-0")
        assert not cache.cluster.is_assumed("default/b-t-0")
        assert cluster.asked == []
        cluster.release.set()
        wait_for(lambda: len(cluster.asked) == 2, timeout=10, message="both binds written")
        assert cluster.asked == ["a-t-0", "c-t-0"]  # in the sessions' order
        assert list(env.bound()) == ["default/a-t-0"]
        # c's bind failed in the background: pending again, and a session is due.
        wait_for(lambda: "default/c-t-0" in cache.pending, timeout=10, message="c pending")
        assert cache.dirty.wait(10)
        del cluster.refuse["c-t-0"]
        env.run(1)
        wait_for(lambda: "default/c-t-0" in env.bound(), timeout=10, message="c bound")
    finally:
        cluster.release.set()
        env.sched.close()
