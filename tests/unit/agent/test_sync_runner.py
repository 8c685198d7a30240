"""The rule writers' shared loop (service proxy, NetworkPolicy, ingress):
no sync before the informers have synced, a failed sync retried after
retry_interval, a full sync every sync_period."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from agent.sync_runner import SyncRunner
from machinery.clock import FakeClock
from tests.harness.wait import wait_for


@dataclass(frozen=True)
class Timing:
    min_sync_interval: float = 0.0
    retry_interval: float = 5.0
    sync_period: float = 30.0


class Writer(SyncRunner):
    what = "test"

    def __init__(self, clock: FakeClock) -> None:
        self._init_runner(clock)
        self.ready = threading.Event()
        self.fail = False
        self.syncs: list[bool] = []

    def sync(self, full: bool = False) -> None:
        self._last_sync = self.clock.monotonic()
        self.syncs.append(full)
        if self.fail:
            raise OSError("iptables-restore: exit 1")

    def _ready(self) -> bool:
        return self.ready.wait(0.05)

    def _sync_timing(self) -> Timing:
        return Timing()


def test_waits_for_informers_retries_failures_and_syncs_in_full() -> None:
    clock = FakeClock()
    w = Writer(clock)
    w._run_loop("test-writer")
    try:
        assert not w._stop.wait(0.3)
        assert w.syncs == []  # the informers have not synced
        w.ready.set()
        wait_for(lambda: w.syncs == [False], timeout=10, message="first sync")
        w.fail = True
        w._wake.set()
        wait_for(lambda: isinstance(w.last_error, OSError), timeout=10, message="a failed sync")
        w.fail = False
        clock.step(5)  # retry_interval
        wait_for(lambda: len(w.syncs) == 3 and w.last_error is None, timeout=10, message="retry")
        clock.step(25)  # sync_period (30 s from the start)
        wait_for(lambda: w.syncs[-1] is True, timeout=10, message="the periodic full sync")
    finally:
        w._stop_runner()
    assert w._thread is not None and not w._thread.is_alive()
