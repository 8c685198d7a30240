"""The metrics collector: two samples a node and a pod make a rate, a failing
agent is retried only after a backoff, a node gone takes its samples along."""

from __future__ import annotations

from typing import Any

from controlplane.apiserver.metricsapi.collector import Collector
from proto.agent.v1 import agent_pb2 as pb


def node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}}


def test_samples_pair_up_and_a_failing_agent_backs_off() -> None:
    nodes = [node("a"), node("b")]
    calls: list[str] = []
    clock = [10**12]

    def fetch(n: dict[str, Any]) -> pb.StatsResponse:
        name = n["metadata"]["name"]
        calls.append(name)
        if name == "b":
            raise OSError("unreachable")
        clock[0] += 10**9
        usage = pb.Usage(timestamp_nanos=clock[0], cpu_usage_core_nano_seconds=clock[0] // 2)
        pod = pb.PodStats(namespace="ns", pod="p", usage=usage,
                          containers=[pb.ContainerStats(name="c", usage=usage)])  # fmt: skip
        return pb.StatsResponse(node=pb.NodeStats(node_name=name, usage=usage), pods=[pod])

    collector = Collector(lambda: nodes, fetch)
    try:
        assert collector.scrape() is True  # one sample each: scrape again soon
        assert collector.scrape() is False
        pair = collector.node_pairs()["a"]
        assert pair.old is not None and pair.new is not None
        assert collector.pod_pairs("ns")[("ns", "p")].node == "a"
        assert calls.count("b") == 1  # backed off after its failure
        nodes.pop()  # b gone; then a gone: its pods go too
        nodes.pop()
        collector.scrape()
        assert collector.node_pairs() == {} and collector.pod_pairs(None) == {}
    finally:
        collector.stop()
