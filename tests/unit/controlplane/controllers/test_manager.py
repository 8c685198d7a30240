"""The controller manager: --controllers, panics, metrics, leader election, HTTP."""

from __future__ import annotations

import threading

import pytest

from controlplane.controllers.base import Controller, ControllerContext
from controlplane.controllers.config import (
    NAMES,
    ManagerConfig,
    UnknownController,
    is_enabled,
    parse_controllers,
)
from controlplane.controllers.manager import REGISTRY, ControllerManager
from machinery.clock import FakeClock
from tests.fakes.fake_apiclient import FakeApiClient
from tests.harness.wait import wait_for

from .conftest import replicaset


@pytest.mark.parametrize(
    ("flag", "name", "want"),
    [
        ("*", "replicaset", True),
        ("*", "namespace", False),  # disabled by default
        ("*,namespace", "namespace", True),
        ("*,-replicaset", "replicaset", False),
        ("-replicaset,*", "replicaset", False),
        ("replicaset", "deployment", False),
        ("replicaset", "replicaset", True),
        ("replicaset,-replicaset", "replicaset", True),  # first match wins
    ],
)
def test_is_enabled(flag, name, want):
    assert is_enabled(name, parse_controllers(flag)) is want


def test_unknown_controller_refused():
    with pytest.raises(UnknownController, match="bogus"):
        parse_controllers("*,-bogus")
    assert parse_controllers("") == ("*",)
    assert "garbagecollector" in REGISTRY and "horizontalpodautoscaling" in REGISTRY


def test_the_flags_know_every_controller_the_manager_starts():
    """`skiff controlplane` reads --controllers against config.NAMES without
    importing the controllers: the names are the registry's, in its order."""
    assert tuple(REGISTRY) == NAMES


class Exploding(Controller):
    name = "exploding"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.calls = 0
        self.lock = threading.Lock()
        rs = self.watch("ReplicaSet")
        rs.add_event_handler(on_add=self.enqueue)

    def sync(self, key: str) -> float | None:
        with self.lock:
            self.calls += 1
            n = self.calls
        if n <= 3:
            raise ZeroDivisionError("a bug in a reconcile")
        return None


def test_panic_is_caught_logged_and_retried_with_backoff():
    clock = FakeClock()
    client = FakeApiClient(clock=clock)
    registry = {**REGISTRY, "exploding": Exploding}
    m = ControllerManager(
        client,
        ManagerConfig(controllers=("exploding", "replicaset")),
        clock=clock,
        registry=registry,
    )
    m.start_controllers(5)
    try:
        client.create("ReplicaSet", replicaset(replicas=1))
        ctrl = m.controllers["exploding"]
        assert isinstance(ctrl, Exploding)
        wait_for(lambda: ctrl.calls == 1)
        wait_for(lambda: ctrl.queue.waiting() == 1)  # backing off, not spinning
        assert ctrl.queue.num_requeues("default/rs") == 1
        for n in (2, 3, 4):
            wait_for(lambda: ctrl.queue.waiting() == 1)
            clock.step(1)
            wait_for(lambda want=n: ctrl.calls == want)  # type: ignore[misc]
        snap = m.metrics()["exploding"]
        assert snap["panics"] == 3 and snap["errors"] == 3 and snap["reconciles"] >= 4
        # the other controller kept working
        wait_for(lambda: len(client.objects("Pod")) == 1)
        assert m.metrics()["replicaset"]["reconciles"] >= 1
        text = m.metrics_text()
        # client-go's workqueue series: three failed syncs were three retries.
        assert 'workqueue_retries_total{name="exploding"} 3.0' in text
        assert 'workqueue_depth{name="replicaset"}' in text
        assert 'workqueue_adds_total{name="replicaset"}' in text
        assert m.healthy()
    finally:
        m.stop_controllers()


def test_leader_election_only_one_manager_acts():
    client = FakeApiClient()
    cfg = dict(
        controllers=("replicaset",),
        leader_elect=True,
        lease_duration=3.0,
        renew_deadline=2.0,
        retry_period=0.2,
    )
    a = ControllerManager(client, ManagerConfig(leader_elect_identity="a", **cfg))  # type: ignore[arg-type]
    b = ControllerManager(client, ManagerConfig(leader_elect_identity="b", **cfg))  # type: ignore[arg-type]
    a.start()
    wait_for(lambda: a.is_leader() and a.controllers, timeout=10)
    b.start()
    try:
        client.create("ReplicaSet", replicaset(replicas=2))
        wait_for(lambda: len(client.objects("Pod")) == 2)
        assert not b.is_leader() and not b.controllers
        lease = client.get("Lease", "skiff-controller-manager", "kube-system")
        assert lease["spec"]["holderIdentity"] == "a"
        # a stops (releasing the lease): b takes over and acts
        a.stop()
        wait_for(lambda: b.is_leader() and b.controllers, timeout=10)
        client.patch("ReplicaSet", "rs", {"spec": {"replicas": 3}})
        wait_for(lambda: len(client.objects("Pod")) == 3)
    finally:
        a.stop()
        b.stop()


def test_component_entry_point_and_flags():
    import argparse

    from controlplane.controllers import config
    from controlplane.controllers import manager as mgr

    parser = argparse.ArgumentParser()
    config.add_flags(parser)
    args = parser.parse_args(
        ["--controllers", "*,-podgc", "--cluster-cidr", "10.9.0.0/16", "--no-leader-elect"]
    )
    cfg = config.config_from_args(args)
    assert (
        cfg.controllers == ("*", "-podgc")
        and cfg.cluster_cidr == "10.9.0.0/16"
        and not cfg.leader_elect
    )
    with pytest.raises(UnknownController):
        config.config_from_args(parser.parse_args(["--controllers", "nope"]))
    client = FakeApiClient()
    stop = threading.Event()
    mgr.component(ManagerConfig(controllers=("replicaset",)))(client, stop)
    client.create("ReplicaSet", replicaset(replicas=2))
    wait_for(lambda: len(client.objects("Pod")) == 2)
    stop.set()
    wait_for(lambda: not any(t.name == "controller-manager" for t in threading.enumerate()))


def test_a_term_that_ends_while_the_controllers_start_starts_none():
    # A stop as the manager becomes leader: on_stopped_leading ran before the
    # controllers were published and found none to stop. They started after
    # it and ran until the process's connection closed (its stop waited out
    # the whole grace for their threads).
    client = FakeApiClient()
    m = ControllerManager(client, ManagerConfig(controllers=("replicaset",)))
    lost = threading.Event()
    lost.set()
    m.start_controllers(5, lost=lost)
    assert not m.controllers and m.context is None
    assert not m.wait_running(0)
    assert client.open_watches("ReplicaSet") == 0 and client.open_watches("Pod") == 0
    # The same manager's next term starts them.
    m.start_controllers(5, lost=threading.Event())
    try:
        assert set(m.controllers) == {"replicaset"} and m.wait_running(0)
        client.create("ReplicaSet", replicaset(replicas=1))
        wait_for(lambda: len(client.objects("Pod")) == 1)
    finally:
        m.stop_controllers()
