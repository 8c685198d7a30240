"""Leader election on a Lease with optimistic concurrency and an injected clock."""

from __future__ import annotations

import threading

import pytest

from controlplane.client import errors
from controlplane.client.leaderelection import Callbacks, LeaderElectionConfig, LeaderElector
from machinery.clock import FakeClock
from tests.fakes.fake_apiclient import FakeApiClient
from tests.harness.wait import wait_for


def elector(client: FakeApiClient, clock: FakeClock, identity: str, **kw: object) -> LeaderElector:
    cfg = LeaderElectionConfig("ctrl", "kube-system", identity, 15, 10, 2)
    return LeaderElector(client, cfg, Callbacks(**kw), clock)  # type: ignore[arg-type]


def test_config_validation() -> None:
    with pytest.raises(ValueError):
        LeaderElectionConfig("a", "b", "me", lease_duration=5, renew_deadline=10)
    with pytest.raises(ValueError):
        LeaderElectionConfig("a", "b", "")


def test_first_candidate_creates_lease_second_waits_for_expiry() -> None:
    clock = FakeClock()
    client = FakeApiClient(clock=clock)
    a, b = elector(client, clock, "a"), elector(client, clock, "b")
    assert a.try_acquire_or_renew()
    lease = client.get("Lease", "ctrl", "kube-system")
    assert lease["spec"]["holderIdentity"] == "a"
    assert lease["spec"]["leaseDurationSeconds"] == 15
    assert lease["spec"]["leaseTransitions"] == 0
    assert lease["spec"]["acquireTime"] == lease["spec"]["renewTime"]
    assert not b.try_acquire_or_renew()  # b first observes the record now
    clock.step(10)
    assert a.try_acquire_or_renew()  # a renews: b sees a change, restarts its timer
    renewed = client.get("Lease", "ctrl", "kube-system")["spec"]
    assert renewed["acquireTime"] == lease["spec"]["acquireTime"]
    assert renewed["renewTime"] != lease["spec"]["renewTime"]
    clock.step(10)
    assert not b.try_acquire_or_renew()
    clock.step(14)
    assert not b.try_acquire_or_renew()  # 14 s since b saw the renewal
    clock.step(1)
    assert b.try_acquire_or_renew()
    taken = client.get("Lease", "ctrl", "kube-system")["spec"]
    assert taken["holderIdentity"] == "b" and taken["leaseTransitions"] == 1
    assert not a.try_acquire_or_renew()  # a's view is stale: it has lost


def test_concurrent_update_conflict_means_not_acquired() -> None:
    clock = FakeClock()
    client = FakeApiClient(clock=clock)
    a = elector(client, clock, "a")
    assert a.try_acquire_or_renew()
    client.fail("update", errors.Conflict("modified"), kind="Lease")
    assert not a.try_acquire_or_renew()
    client.fail("create", errors.AlreadyExists("raced"), kind="Lease")
    client.delete("Lease", "ctrl", "kube-system")
    assert not elector(client, clock, "c").try_acquire_or_renew()


def test_release_lets_successor_take_over_at_once() -> None:
    clock = FakeClock()
    client = FakeApiClient(clock=clock)
    a, b = elector(client, clock, "a"), elector(client, clock, "b")
    assert a.try_acquire_or_renew()
    assert a.release()
    assert client.get("Lease", "ctrl", "kube-system")["spec"]["holderIdentity"] == ""
    assert b.try_acquire_or_renew()
    assert not a.release()


def test_run_leads_renews_and_stops_leading_when_renewal_fails() -> None:
    clock = FakeClock()
    client = FakeApiClient(clock=clock)
    started = threading.Event()
    stopped = threading.Event()
    leaders: list[str] = []
    leading_event: list[threading.Event] = []

    def on_started(ev: threading.Event) -> None:
        leading_event.append(ev)
        started.set()

    a = elector(
        client,
        clock,
        "a",
        on_started_leading=on_started,
        on_stopped_leading=stopped.set,
        on_new_leader=leaders.append,
    )
    stop = threading.Event()
    t = threading.Thread(target=a.run, args=(stop,))
    t.start()
    try:
        assert started.wait(5) and a.is_leader() and leaders == ["a"]
        wait_for(lambda: clock.waiters() == 1)
        before = client.get("Lease", "ctrl", "kube-system")["metadata"]["resourceVersion"]
        clock.step(2)
        wait_for(
            lambda: (
                client.get("Lease", "ctrl", "kube-system")["metadata"]["resourceVersion"] != before
            )
        )
        # the API server becomes unreachable: renewals fail until the deadline
        client.fail("get", errors.Unavailable("down"), kind="Lease", times=100)
        for _ in range(20):
            wait_for(lambda: clock.waiters() == 1 or not t.is_alive())
            if not t.is_alive():
                break
            n = clock.sleeps()
            clock.step(2)
            wait_for(lambda: clock.sleeps() > n or not t.is_alive())  # noqa: B023
        t.join(5)
        assert not t.is_alive()
        assert stopped.is_set() and not a.is_leader() and leading_event[0].is_set()
    finally:
        stop.set()
        t.join(5)


def test_run_releases_on_stop_and_waits_while_other_leads() -> None:
    clock = FakeClock()
    client = FakeApiClient(clock=clock)
    other = elector(client, clock, "other")
    assert other.try_acquire_or_renew()
    started = threading.Event()
    me = elector(client, clock, "me", on_started_leading=lambda ev: started.set())
    stop = threading.Event()
    t = threading.Thread(target=me.run, args=(stop,))
    t.start()
    try:
        wait_for(lambda: clock.waiters() == 1)
        assert not started.is_set() and me.leader() == "other"
        assert other.release()
        clock.step(2)
        assert started.wait(5)
        wait_for(lambda: clock.waiters() == 1)
        stop.set()
        t.join(5)
        assert not t.is_alive()
        assert client.get("Lease", "ctrl", "kube-system")["spec"]["holderIdentity"] == ""
    finally:
        stop.set()
        t.join(5)


def test_run_stopped_while_its_acquiring_write_is_in_flight_releases_the_lease() -> None:
    # The stop arrives after the store took the write and before the elector
    # saw the answer: the lease is held in the store, so run() gives it back.
    clock = FakeClock()
    client = FakeApiClient(clock=clock)
    stop = threading.Event()
    create = client.create

    def create_then_stop(*args: object, **kw: object) -> object:
        created = create(*args, **kw)  # type: ignore[arg-type]
        stop.set()
        return created

    client.create = create_then_stop  # type: ignore[method-assign,assignment]
    started = threading.Event()
    me = elector(client, clock, "me", on_started_leading=lambda ev: started.set())
    me.run(stop)
    assert not started.is_set()
    assert client.get("Lease", "ctrl", "kube-system")["spec"]["holderIdentity"] == ""


def test_two_candidates_running_never_lead_together_and_hand_over() -> None:
    clock = FakeClock()
    client = FakeApiClient(clock=clock)
    leading: set[str] = set()
    overlap: list[set[str]] = []

    def started(name: str) -> Callbacks:
        def on_start(ev: threading.Event) -> None:
            leading.add(name)
            if len(leading) > 1:
                overlap.append(set(leading))

        return Callbacks(
            on_started_leading=on_start, on_stopped_leading=lambda: leading.discard(name)
        )

    cfg = {n: LeaderElectionConfig("ctrl", "kube-system", n, 15, 10, 2) for n in ("a", "b")}
    electors = {n: LeaderElector(client, cfg[n], started(n), clock) for n in cfg}
    stops = {n: threading.Event() for n in cfg}
    threads = {n: threading.Thread(target=electors[n].run, args=(stops[n],)) for n in cfg}
    for t in threads.values():
        t.start()
    try:
        wait_for(lambda: len(leading) == 1 and clock.waiters() == 2)
        first = next(iter(leading))
        other = "b" if first == "a" else "a"
        for _ in range(5):  # time passes; the leader keeps renewing, the other waits
            n = clock.sleeps()
            clock.step(2)
            wait_for(lambda: clock.sleeps() >= n + 2 and clock.waiters() == 2)  # noqa: B023
            assert leading == {first}
        stops[first].set()  # the leader stops cleanly and releases the lease
        threads[first].join(5)
        assert not threads[first].is_alive()
        n = clock.sleeps()
        clock.step(2)
        wait_for(lambda: leading == {other})
        lease = client.get("Lease", "ctrl", "kube-system")["spec"]
        assert lease["holderIdentity"] == other and lease["leaseTransitions"] == 1
        assert overlap == []
    finally:
        for s in stops.values():
            s.set()
        for t in threads.values():
            t.join(5)
