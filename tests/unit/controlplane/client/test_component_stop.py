"""A component's stop joins the threads it started before its connection
goes (run_component): a thread threading.enumerate() lists while it is still
being started (a new leader's, as SIGTERM arrives) is joined once running,
not refused with RuntimeError. That error once left the controller
manager's Lease held after SIGTERM: the connection closed before the
elector's release."""

from __future__ import annotations

import threading
import time

import pytest

from controlplane.client.component import join_threads_since


def test_a_thread_still_being_started_is_joined_once_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = set(threading.enumerate())
    go = threading.Event()
    released, served = threading.Event(), threading.Event()

    def elector() -> None:  # its last write after the stop: the Lease released
        go.wait(10)
        released.set()

    def leader() -> None:
        go.wait(10)
        served.set()

    first = threading.Thread(target=elector)
    first.start()
    starting = threading.Thread(target=leader)  # started by the second listing
    real = threading.enumerate
    listings = 0

    def listing() -> list[threading.Thread]:
        nonlocal listings
        listings += 1
        if listings == 2:
            starting.start()
        found = real()
        # threading lists a thread from start() on, before it runs
        return found if starting.ident is not None else [*found, starting]

    monkeypatch.setattr(threading, "enumerate", listing)
    go.set()
    began = time.monotonic()
    join_threads_since(before, began + 10)
    assert released.is_set() and served.is_set()
    assert not first.is_alive() and not starting.is_alive()
    assert time.monotonic() - began < 5


def test_a_thread_that_never_runs_ends_the_wait_at_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = set(threading.enumerate())
    stuck = threading.Thread(target=lambda: None)  # listed, never started
    real = threading.enumerate
    monkeypatch.setattr(threading, "enumerate", lambda: [*real(), stuck])
    began = time.monotonic()
    join_threads_since(before, began + 0.2)
    assert 0.2 <= time.monotonic() - began < 2
