"""Scraping the agents' resource usage, as metrics-server scrapes kubelets.

Every `resolution` seconds (metrics-server's --metric-resolution, 15 s in
its manifest) the collector lists the Nodes and calls each one's agent Stats
(in parallel, each at most `timeout`): cumulative CPU core-nanoseconds and
memory working set of the node, of its pods and of their containers, with
the time they were read. It keeps the two newest samples per node and per
pod; a node that cannot be reached keeps its older samples only until they
are older than `3 * resolution` (then it has no metrics, as metrics-server
drops it). A node or pod seen once is scraped again after `FIRST_GAP`
seconds, so metrics exist soon after it appears. Never writes anything.

It scrapes only while the metrics API is used (`demand()`, on every read:
`kubectl top`, the HPA every 15 s) and for `IDLE` seconds after, so a
cluster nobody asks for metrics pays nothing (hollow nodes in a benchmark
are never dialed). The first read after idling waits for two passes (at
most `FIRST_WAIT` seconds). An agent that fails is retried after a backoff
(the resolution, doubling to `MAX_BACKOFF`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from machinery.wakeloop import WakeLoop
from proto.agent.v1 import agent_pb2 as pb

log = logging.getLogger(__name__)

RESOLUTION = 15.0
FIRST_GAP = 2.0
IDLE = 600.0
FIRST_WAIT = 10.0
MAX_BACKOFF = 300.0
Fetch = Callable[[dict[str, Any]], pb.StatsResponse]  # (Node object) -> its agent's Stats


@dataclass(frozen=True)
class Sample:
    time_ns: int  # when the counters were read (the agent's clock)
    cpu_ns: int  # cumulative CPU core-nanoseconds
    memory: int  # working set bytes
    containers: tuple[tuple[str, int, int], ...] = ()  # (name, cpu_ns, memory)


@dataclass
class Pair:
    """The newest two samples of one node or pod."""

    old: Sample | None = None
    new: Sample | None = None
    node: str = ""
    seen: float = field(default_factory=time.monotonic)

    def add(self, sample: Sample) -> None:
        if self.new is not None and sample.time_ns <= self.new.time_ns:
            return  # the same read again
        self.old, self.new = self.new, sample
        self.seen = time.monotonic()


def _sample(usage: pb.Usage, containers: tuple[tuple[str, int, int], ...] = ()) -> Sample:
    ts = usage.timestamp_nanos or time.time_ns()
    return Sample(ts, usage.cpu_usage_core_nano_seconds, usage.memory_working_set_bytes, containers)


class Collector:
    def __init__(
        self, list_nodes: Callable[[], list[dict[str, Any]]], fetch: Fetch,
        resolution: float = RESOLUTION, timeout: float = 5.0,
    ) -> None:  # fmt: skip
        self._list_nodes = list_nodes
        self._fetch = fetch
        self.resolution = resolution
        self.timeout = timeout
        self._lock = threading.Lock()
        self.nodes: dict[str, Pair] = {}
        self.pods: dict[tuple[str, str], Pair] = {}
        self._loop = WakeLoop()
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="metrics-scrape")
        self._passes = threading.Condition()
        self.passes = 0  # scrape passes done
        self._demanded = float("-inf")  # monotonic time of the last read
        self._failures: dict[str, tuple[int, float]] = {}  # node -> (failures, retry at)

    def start(self) -> None:
        self._loop.start(self._run, "metrics-collector")

    def stop(self) -> None:
        self._loop.stop()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def demand(self) -> None:
        """A read of the metrics API: scrape (again) if idle, and wait for
        the first two passes when there was nothing."""
        idle = time.monotonic() - self._demanded > IDLE
        self._demanded = time.monotonic()
        if not idle:
            return
        with self._passes:
            goal = self.passes + 2
        self._loop.wake()
        with self._lock:
            if any(p.old is not None for p in self.nodes.values()):
                return  # samples to answer with already
        with self._passes:
            self._passes.wait_for(lambda: self.passes >= goal or self._loop.stopped(), FIRST_WAIT)

    def _run(self) -> None:
        while not self._loop.stopped():
            if time.monotonic() - self._demanded > IDLE:
                with self._lock:  # idle: old samples would make a window of hours
                    self.nodes.clear()
                    self.pods.clear()
                self._loop.wait()
                continue
            try:
                fresh = self.scrape()
            except Exception:  # a failed pass is retried on the next
                log.exception("metrics scrape failed")
                fresh = False
            with self._passes:
                self.passes += 1
                self._passes.notify_all()
            self._loop.wait(FIRST_GAP if fresh else self.resolution)

    def _one(self, node: dict[str, Any]) -> tuple[str, pb.StatsResponse | None]:
        name = str((node.get("metadata") or {}).get("name") or "")
        failures, retry_at = self._failures.get(name, (0, 0.0))
        if time.monotonic() < retry_at:
            return name, None
        try:
            found = self._fetch(node)
        except Exception as err:  # an unreachable agent only costs its node's metrics
            log.debug("no stats from node %s: %s", name, err)
            backoff = min(self.resolution * 2**failures, MAX_BACKOFF)
            self._failures[name] = (failures + 1, time.monotonic() + backoff)
            return name, None
        self._failures.pop(name, None)
        return name, found

    def scrape(self) -> bool:
        """One pass over every node; True when some node or pod has one sample only."""
        nodes = self._list_nodes()
        results = list(self._pool.map(self._one, nodes))
        now = time.monotonic()
        with self._lock:
            for name, resp in results:
                if resp is None:
                    continue
                self.nodes.setdefault(name, Pair(node=name)).add(_sample(resp.node.usage))
                for pod in resp.pods:
                    containers = tuple(
                        (c.name, c.usage.cpu_usage_core_nano_seconds,
                         c.usage.memory_working_set_bytes) for c in pod.containers
                    )  # fmt: skip
                    pair = self.pods.setdefault((pod.namespace, pod.pod), Pair(node=name))
                    pair.node = name
                    pair.add(_sample(pod.usage, containers))
            names = {str((n.get("metadata") or {}).get("name") or "") for n in nodes}
            limit = 3 * self.resolution
            for node in [
                k for k, p in self.nodes.items() if k not in names or now - p.seen > limit
            ]:
                del self.nodes[node]
            for pod_key in [
                k for k, p in self.pods.items() if p.node not in names or now - p.seen > limit
            ]:
                del self.pods[pod_key]
            return any(p.old is None for p in (*self.nodes.values(), *self.pods.values()))

    def node_pairs(self) -> dict[str, Pair]:
        with self._lock:
            return dict(self.nodes)

    def pod_pairs(self, namespace: str | None) -> dict[tuple[str, str], Pair]:
        with self._lock:
            return {k: p for k, p in self.pods.items() if namespace is None or k[0] == namespace}
