"""AgentMetrics reads pod usage from every node's stats (nodes/<name>/stats on
the API server; here a fake `fetch`)."""

import pytest

from controlplane.client import errors
from controlplane.client.config import ClientConfig
from controlplane.controllers.agent_metrics import AgentMetrics
from proto.agent.v1 import agent_pb2 as pb
from tests.fakes.fake_apiclient import FakeApiClient

PODS = [
    pb.PodStats(
        namespace="default",
        pod="web-1",
        usage=pb.Usage(
            timestamp_nanos=1_700_000_000_000_000_000,
            cpu_usage_nano_cores=250_000_000,
            memory_working_set_bytes=64 << 20,
        ),
    ),
    pb.PodStats(namespace="other", pod="db-0", usage=pb.Usage(cpu_usage_nano_cores=1_000_000_000)),
]
CONFIG = ClientConfig("127.0.0.1:1")


class Stats:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, node: str) -> pb.StatsResponse:
        self.asked.append(node)
        if node != "up":
            raise errors.Unavailable(f"agent of node {node}: unreachable")
        return pb.StatsResponse(pods=PODS)


def test_pod_usage_by_namespace_and_resource() -> None:
    api = FakeApiClient()
    api.create("Node", {"metadata": {"name": "up"}})
    clock = [0.0]
    stats = Stats()
    m = AgentMetrics(api, CONFIG, max_age=10, now=lambda: clock[0], fetch=stats)
    cpu = m.pod_metrics("default", "cpu")
    assert cpu["web-1"].value == pytest.approx(0.25)
    assert cpu["web-1"].timestamp == pytest.approx(1.7e9)
    assert m.pod_metrics("default", "memory")["web-1"].value == 64 << 20
    assert m.pod_metrics("other", "cpu")["db-0"].value == pytest.approx(1.0)
    assert stats.asked == ["up"]  # one poll serves every query within max_age
    clock[0] = 11
    m.pod_metrics("default", "cpu")
    assert stats.asked == ["up", "up"]


def test_unreachable_node_leaves_its_pods_out() -> None:
    api = FakeApiClient()
    for name in ("up", "down"):
        api.create("Node", {"metadata": {"name": name}})
    m = AgentMetrics(api, CONFIG, timeout=2, fetch=Stats())
    assert set(m.pod_metrics("default", "cpu")) == {"web-1"}
