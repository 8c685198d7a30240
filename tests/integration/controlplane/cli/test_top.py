"""skiffctl top nodes|pods against the fake API client, a stand-in for the API
server's nodes/stats and in-test agent endpoints behind it."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from proto.agent.v1 import agent_pb2 as pb
from tests.fakes.fake_agent import FakeAgent
from tests.fakes.skiffctl import Ctl, Result, node, pod, with_token
from tests.harness.ports import free_port
from tests.harness.wait import wait_for

pytestmark = pytest.mark.usefixtures("rest")  # pods/log and nodes/stats served

MI = 1024 * 1024


def usage(millicores: int, mebibytes: int, cumulative: int = 0, at: int = 0) -> pb.Usage:
    return pb.Usage(
        timestamp_nanos=at,
        cpu_usage_nano_cores=millicores * 1_000_000,
        cpu_usage_core_nano_seconds=cumulative,
        memory_working_set_bytes=mebibytes * MI,
    )


def pod_stats(ns: str, name: str, *containers: tuple[str, int, int]) -> pb.PodStats:
    p = pb.PodStats(namespace=ns, pod=name, uid=f"uid-{ns}-{name}")
    for cname, cpu, mem in containers:
        p.containers.append(pb.ContainerStats(name=cname, usage=usage(cpu, mem)))
    p.usage.CopyFrom(usage(sum(c[1] for c in containers), sum(c[2] for c in containers)))
    return p


@pytest.fixture
def agents() -> Iterator[list[FakeAgent]]:
    made = [FakeAgent().start(), FakeAgent().start()]
    try:
        yield made
    finally:
        for a in made:
            a.stop()


def cluster(ctl: Ctl, agents: list[FakeAgent]) -> None:
    with_token(ctl)
    a1, a2 = agents
    node(ctl, "n1", a1.port, cpu="2", memory="4Gi")
    node(ctl, "n2", a2.port, cpu="1500m", memory="2048Mi")
    a1.stats = pb.StatsResponse(
        node=pb.NodeStats(node_name="n1", usage=usage(500, 1024)),
        pods=[
            pod_stats("default", "web-1", ("nginx", 120, 30), ("sidecar", 5, 10)),
            pod_stats("kube-system", "dns", ("dns", 3, 20)),
        ],
    )
    a2.stats = pb.StatsResponse(
        node=pb.NodeStats(node_name="n2", usage=usage(1500, 512)),
        pods=[pod_stats("default", "web-2", ("nginx", 300, 60))],
    )
    pod(ctl, "web-1", "n1", ("nginx", "sidecar"))
    pod(ctl, "dns", "n1", ("dns",), ns="kube-system")
    pod(ctl, "web-2", "n2", ("nginx",))
    pod(ctl, "pending", "", ("x",), phase="Pending")


def test_top_nodes(ctl: Ctl, agents: list[FakeAgent]) -> None:
    cluster(ctl, agents)
    r = ctl("top", "nodes")
    assert r.code == 0, r.err
    assert r.out == (
        "NAME   CPU(cores)   CPU(%)   MEMORY(bytes)   MEMORY(%)\n"
        "n1     500m         25%      1024Mi          25%\n"
        "n2     1500m        100%     512Mi           25%\n"
    )
    for a in agents:
        [seen] = a.seen
        assert "authorization" not in seen.metadata  # skiffctl's token stays with the API server
        assert (seen.request.namespace, seen.request.pod) == ("", "")
    r = ctl("top", "node", "n2", "--no-headers")
    assert r.out == "n2   1500m   100%   512Mi   25%\n"
    r = ctl("top", "no", "--sort-by", "memory")
    assert [line.split()[0] for line in r.out.splitlines()[1:]] == ["n1", "n2"]
    r = ctl("top", "nodes", "--sort-by=cpu")
    assert [line.split()[0] for line in r.out.splitlines()[1:]] == ["n2", "n1"]


def test_top_nodes_unreachable_agent_is_unknown(ctl: Ctl, agents: list[FakeAgent]) -> None:
    cluster(ctl, agents)
    port = free_port()
    node(ctl, "n0", port)
    r = ctl("top", "nodes")
    assert r.code == 0
    assert r.out.splitlines()[-1].split() == ["n0", *["<unknown>"] * 4]
    assert r.err.startswith(f"warning: cannot reach the agent of node n0 at 127.0.0.1:{port}")


def test_top_pods(ctl: Ctl, agents: list[FakeAgent]) -> None:
    cluster(ctl, agents)
    r = ctl("top", "pods")
    assert r.code == 0, r.err
    assert r.out == (
        "NAME    CPU(cores)   MEMORY(bytes)\nweb-1   125m         40Mi\nweb-2   300m         60Mi\n"
    )
    assert all(a.seen[-1].request.namespace == "default" for a in agents)
    r = ctl("top", "pod", "-A")
    assert r.out == (
        "NAMESPACE     NAME    CPU(cores)   MEMORY(bytes)\n"
        "default       web-1   125m         40Mi\n"
        "default       web-2   300m         60Mi\n"
        "kube-system   dns     3m           20Mi\n"
    )
    r = ctl("top", "pods", "web-1", "--containers")
    assert r.out == (
        "POD     NAME      CPU(cores)   MEMORY(bytes)\n"
        "web-1   nginx     120m         30Mi\n"
        "web-1   sidecar   5m           10Mi\n"
    )
    assert agents[0].seen[-1].request.pod == "web-1"
    assert len(agents[1].seen) == 2  # web-1 is on n1 only
    r = ctl("top", "po", "--sort-by", "cpu", "--no-headers")
    assert [line.split()[0] for line in r.out.splitlines()] == ["web-2", "web-1"]
    r = ctl("-n", "empty", "top", "pods")
    assert (r.code, r.err) == (0, "No resources found in empty namespace.\n")


def test_top_errors(ctl: Ctl, agents: list[FakeAgent]) -> None:
    cluster(ctl, agents)
    r = ctl("top", "services")
    assert r.code == 1 and "use nodes or pods" in r.err
    r = ctl("top", "pods", "pending")
    assert r.code == 1 and "Metrics not available for pod default/pending" in r.err
    agents[0].stats = pb.StatsResponse(node=pb.NodeStats(node_name="n1"))
    r = ctl("top", "pods", "web-1")
    assert (r.code, r.err) == (1, "error: Metrics not available for pod default/web-1\n")
    r = ctl("top", "pods", "ghost")
    assert r.code == 1 and "NotFound" in r.err


def run_async(ctl: Ctl, *argv: str) -> tuple[threading.Thread, list[Result]]:
    out: list[Result] = []
    t = threading.Thread(target=lambda: out.append(ctl(*argv)), daemon=True)
    t.start()
    return t, out


def test_top_nodes_rate_from_two_cumulative_samples(ctl: Ctl, agents: list[FakeAgent]) -> None:
    """An agent that reports only the CPU counter gets sampled twice, one interval apart."""
    a1 = agents[0]
    node(ctl, "n1", a1.port, cpu="2", memory="4Gi")
    second = 1_000_000_000
    a1.stats_queue = [
        pb.StatsResponse(
            node=pb.NodeStats(
                node_name="n1",
                usage=pb.Usage(
                    timestamp_nanos=10 * second,
                    cpu_usage_core_nano_seconds=40 * second,
                    memory_working_set_bytes=2048 * MI,
                ),
            )
        ),
        pb.StatsResponse(
            node=pb.NodeStats(
                node_name="n1",
                usage=pb.Usage(
                    timestamp_nanos=12 * second,
                    cpu_usage_core_nano_seconds=41 * second,  # 1 s of CPU in 2 s
                    memory_working_set_bytes=2048 * MI,
                ),
            )
        ),
    ]
    t, out = run_async(ctl, "top", "nodes")
    wait_for(lambda: ctl.clock.waiters() == 1)
    ctl.clock.step(1)
    t.join(5)
    assert out and out[0].code == 0, out
    assert out[0].out.splitlines()[1].split() == ["n1", "500m", "25%", "2048Mi", "50%"]
    assert len(a1.seen) == 2
