"""AgentMetrics reads pod usage from every node's agent Stats endpoint."""

from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest

from controlplane.controllers.agent_metrics import AgentMetrics
from proto.agent.v1 import agent_pb2 as pb
from proto.agent.v1 import agent_pb2_grpc as pb_grpc
from tests.fakes.fake_apiclient import FakeApiClient


class StatsAgent(pb_grpc.AgentServicer):
    def __init__(self, pods: list[pb.PodStats]) -> None:
        self.pods = pods
        self.tokens: list[str] = []

    def Stats(self, request: pb.StatsRequest, context: grpc.ServicerContext) -> pb.StatsResponse:
        self.tokens.append(str(dict(context.invocation_metadata()).get("authorization", "")))
        return pb.StatsResponse(pods=self.pods)


@pytest.fixture
def agent() -> Iterator[tuple[StatsAgent, int]]:
    servicer = StatsAgent(  # type: ignore[abstract]
        [
            pb.PodStats(
                namespace="default",
                pod="web-1",
                usage=pb.Usage(
                    timestamp_nanos=1_700_000_000_000_000_000,
                    cpu_usage_nano_cores=250_000_000,
                    memory_working_set_bytes=64 << 20,
                ),
            ),
            pb.PodStats(
                namespace="other", pod="db-0", usage=pb.Usage(cpu_usage_nano_cores=1_000_000_000)
            ),
        ]
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_AgentServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield servicer, port
    finally:
        server.stop(None)


def node(name: str, port: int, address: str = "127.0.0.1") -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "status": {
            "addresses": [{"type": "InternalIP", "address": address}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
        },
    }


def test_pod_usage_by_namespace_and_resource(agent: tuple[StatsAgent, int]) -> None:
    servicer, port = agent
    api = FakeApiClient()
    api.create("Node", node("n1", port))
    clock = [0.0]
    m = AgentMetrics(api, "tok", max_age=10, now=lambda: clock[0])
    cpu = m.pod_metrics("default", "cpu")
    assert cpu["web-1"].value == pytest.approx(0.25) and cpu["web-1"].timestamp == pytest.approx(
        1.7e9
    )
    assert m.pod_metrics("default", "memory")["web-1"].value == 64 << 20
    assert m.pod_metrics("other", "cpu")["db-0"].value == pytest.approx(1.0)
    assert servicer.tokens == ["Bearer tok"]  # one poll serves every query within max_age
    clock[0] = 11
    m.pod_metrics("default", "cpu")
    assert len(servicer.tokens) == 2


def test_unreachable_node_leaves_its_pods_out(agent: tuple[StatsAgent, int]) -> None:
    _, port = agent
    api = FakeApiClient()
    api.create("Node", node("up", port))
    api.create("Node", {"metadata": {"name": "noaddr"}, "status": {}})
    api.create("Node", node("down", 1))
    m = AgentMetrics(api, "", timeout=2)
    assert set(m.pod_metrics("default", "cpu")) == {"web-1"}
