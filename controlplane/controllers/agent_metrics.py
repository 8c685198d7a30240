"""The HPA's MetricsSource backed by the node agents (metrics-server's job).

Every agent serves Stats (per-pod CPU usage in nanocores and memory working
set, from CRI stats); the API server relays them as nodes/<name>/stats,
authorizing the caller and calling the agent with its own certificate (the
controllers' token never reaches a node). `AgentMetrics.pod_metrics` reads
every Node's stats in parallel, at most once per `max_age` seconds, and answers
from that snapshot: cpu in cores, memory in bytes, timestamped by the agent.
An agent that cannot be reached only leaves its pods out (the HPA treats
them as pods without metrics). It never writes anything.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from controlplane.client import errors
from controlplane.client.apirest import node_stats
from controlplane.client.config import ClientConfig
from controlplane.client.interface import ApiClient
from controlplane.controllers.hpa_calc import MetricSample
from proto.agent.v1 import agent_pb2 as pb

log = logging.getLogger("skiff.controllers.metrics")

Snapshot = dict[tuple[str, str], dict[str, MetricSample]]


class AgentMetrics:
    def __init__(
        self,
        client: ApiClient,
        config: ClientConfig,
        max_age: float = 10.0,
        timeout: float = 5.0,
        now: Callable[[], float] = time.monotonic,
        fetch: Callable[[str], pb.StatsResponse] | None = None,
    ) -> None:
        """`fetch(node)` reads one node's stats (default: nodes/<node>/stats
        on the API server in `config`)."""
        self._client = client
        self._config = config
        self._max_age = max_age
        self._timeout = timeout
        self._now = now
        self._fetch = fetch or (lambda n: node_stats(config, n, timeout=self._timeout))
        self._lock = threading.Lock()
        self._snapshot: Snapshot = {}
        self._taken = float("-inf")
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="agent-metrics")

    def pod_metrics(self, namespace: str, resource: str) -> dict[str, MetricSample]:
        with self._lock:
            if self._now() - self._taken >= self._max_age:
                self._snapshot = self._poll()
                self._taken = self._now()
            return dict(self._snapshot.get((namespace, resource), {}))

    def _poll(self) -> Snapshot:
        nodes = self._client.list("Node").items
        snap: Snapshot = {}
        for result in self._pool.map(self._one, nodes):
            for key, pods in result.items():
                snap.setdefault(key, {}).update(pods)
        return snap

    def _one(self, node: dict[str, object]) -> Snapshot:
        meta = node.get("metadata")
        name = str(meta.get("name", "")) if isinstance(meta, dict) else ""
        try:
            resp = self._fetch(name)
        except errors.ApiError as err:
            log.info("no metrics from a node: %s", err)
            return {}
        out: Snapshot = {}
        for pod in resp.pods:
            ts = pod.usage.timestamp_nanos / 1e9 or time.time()
            out.setdefault((pod.namespace, "cpu"), {})[pod.pod] = MetricSample(
                pod.usage.cpu_usage_nano_cores / 1e9, ts
            )
            out.setdefault((pod.namespace, "memory"), {})[pod.pod] = MetricSample(
                float(pod.usage.memory_working_set_bytes), ts
            )
        return out
