"""A watcher that stops reading is dropped; writers and other watchers go on."""

from __future__ import annotations

import threading

import pytest

from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.interface import ListOptions
from tests.harness.apiserver import Cluster
from tests.harness.wait import wait_for
from tests.harness.watch_collector import Collector


@pytest.fixture
def watch_queue() -> int:
    return 50


def test_slow_watcher_is_dropped_without_blocking_anyone(
    cluster: Cluster, client: GrpcApiClient
) -> None:
    start = client.list("ConfigMap", "default").resource_version
    slow = client.watch("ConfigMap", "default", ListOptions(resource_version=start))
    fast = client.watch("ConfigMap", "default", ListOptions(resource_version=start))
    fast_events = Collector(iter(fast))
    wait_for(lambda: cluster.server.broadcaster.watcher_count() == 2, message="two watchers")
    big = "x" * 16_000
    n = 600
    done = threading.Event()

    def write() -> None:
        for i in range(n):
            client.create("ConfigMap", {"metadata": {"name": f"cm-{i}"}, "data": {"v": big}},
                          "default")  # fmt: skip
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    writer.join(60)
    assert done.is_set(), "writers were blocked by a slow watcher"
    assert len(fast_events.wait(n, timeout=30)) == n
    wait_for(lambda: cluster.server.broadcaster.watcher_count() == 1, timeout=15,
             message="the slow watcher to be dropped")  # fmt: skip
    # The dropped stream ends cleanly after what was already buffered: the
    # client resumes from the last version it saw.
    received = list(slow)
    assert 0 < len(received) < n
    last = received[-1].object["metadata"]["resourceVersion"]
    resumed = client.watch("ConfigMap", "default", ListOptions(resource_version=last))
    rest = Collector(iter(resumed))
    assert len(rest.wait(n - len(received), timeout=30)) == n - len(received)
    resumed.stop()
    fast.stop()
