"""skiffctl logs against the fake API client, a stand-in for the API server's
pods/log (fake_rest.py) and a tiny in-test agent endpoint behind it.

`FakeAgent` is a real gRPC server on 127.0.0.1:0 speaking
skiff.agent.v1.Agent: it records each request with its metadata and
answers with canned log chunks, stats or an error. The fake API client's
Node points at it (InternalIP + daemonEndpoints.kubeletEndpoint.Port).
test_top.py uses it too.
"""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from controlplane.client.agents import agent_address
from proto.agent.v1 import agent_pb2 as pb
from tests.fakes.fake_agent import FakeAgent
from tests.fakes.fake_rest import FakeRest
from tests.fakes.skiffctl import TOKEN, Ctl, node, pod, with_token
from tests.harness.ports import free_port

pytestmark = pytest.mark.usefixtures("rest")  # pods/log and nodes/stats served


def test_logs_streams_both_streams_to_stdout_with_the_token(
    ctl: Ctl, agent: FakeAgent, rest: FakeRest
) -> None:
    with_token(ctl)
    node(ctl, "n1", agent.port)
    pod(ctl, "web")
    agent.chunks = [
        pb.LogChunk(data=b"hello\n", stream="stdout"),
        pb.LogChunk(data=b"oops\n", stream="stderr"),
        pb.LogChunk(data=b"caf\xc3", stream="stdout"),  # a character split across chunks
        pb.LogChunk(data=b"\xa9\n", stream="stdout"),
    ]
    r = ctl("logs", "web")
    assert (r.code, r.out, r.err) == (0, "hello\noops\ncaf\u00e9\n", "")
    [seen] = agent.seen
    assert rest.auth == [f"Bearer {TOKEN}"]  # to the API server, which keeps it
    req = seen.request
    assert (req.namespace, req.pod, req.container) == ("default", "web", "")
    assert (req.follow, req.tail_lines, req.since_seconds, req.previous, req.timestamps) == (
        False,
        0,
        0,
        False,
        False,
    )
    assert ctl("logs", "pod/web").out == r.out


def test_logs_flags_become_the_request(ctl: Ctl, agent: FakeAgent) -> None:
    node(ctl, "n1", agent.port)
    pod(ctl, "web", ns="prod", containers=("app", "side"))
    r = ctl(
        "-n",
        "prod",
        "logs",
        "-f",
        "-c",
        "side",
        "--tail",
        "5",
        "--since=2m",
        "-p",
        "--timestamps",
        "--limit-bytes=100",
        "web",
    )
    assert r.code == 0, r.err
    req = agent.seen[-1].request
    assert (req.namespace, req.pod, req.container) == ("prod", "web", "side")
    assert (req.follow, req.tail_lines, req.since_seconds, req.previous, req.timestamps) == (
        True,
        5,
        120,
        True,
        True,
    )
    assert req.limit_bytes == 100
    # --tail=0: no old lines, which the agent spells as a negative count.
    assert ctl("-n", "prod", "logs", "web", "side", "--tail=0").code == 0
    assert agent.seen[-1].request.tail_lines == -1
    assert agent.seen[-1].request.container == "side"
    r = ctl("-n", "prod", "logs", "web", "--since", "soon")
    assert (r.code, r.err) == (1, "error: invalid --since 'soon' (use e.g. 30s, 5m, 1h)\n")


def test_logs_defaults_a_container_and_picks_a_pod_of_a_workload(
    ctl: Ctl, agent: FakeAgent
) -> None:
    node(ctl, "n1", agent.port)
    pod(ctl, "multi", containers=("a", "b"))
    r = ctl("logs", "multi")
    assert r.code == 0 and r.err == 'Defaulted container "a" out of: a, b\n'
    assert agent.seen[-1].request.container == "a"
    pod(
        ctl,
        "annotated",
        containers=("a", "b"),
        annotations={"kubectl.kubernetes.io/default-container": "b"},
    )
    assert ctl("logs", "annotated").code == 0
    assert agent.seen[-1].request.container == "b"
    ctl.client.create(
        "Deployment",
        {"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}}}},
        "default",
    )
    pod(ctl, "web-a", labels={"app": "web"}, phase="Pending")
    pod(ctl, "web-b", labels={"app": "web"})
    r = ctl("logs", "deployment/web")
    assert r.code == 0 and r.err == "Found 2 pods, using pod/web-b\n"
    assert agent.seen[-1].request.pod == "web-b"
    r = ctl("logs", "deployment/none")
    assert r.code == 1 and "NotFound" in r.err


def test_logs_errors(ctl: Ctl, agent: FakeAgent) -> None:
    node(ctl, "n1", agent.port)
    pod(ctl, "pending", node_name="", phase="Pending")
    r = ctl("logs", "pending")
    assert r.code == 1
    assert r.err == (
        'error: pod "pending" is not scheduled to a node yet (phase Pending); '
        "it has no logs until it runs\n"
    )
    assert not agent.seen
    r = ctl("logs", "ghost")
    assert (r.code, r.err) == (1, 'Error from server (NotFound): pods "ghost" not found\n')
    pod(ctl, "web")
    agent.abort = (
        grpc.StatusCode.INVALID_ARGUMENT,
        "container nope is not valid for pod web: choose one of ['app']",
    )
    r = ctl("logs", "web", "-c", "nope")
    assert r.code == 1
    assert r.err == (
        "Error from server (BadRequest): container nope is not valid for pod web: "
        "choose one of ['app']\n"
    )
    agent.abort = (grpc.StatusCode.PERMISSION_DENIED, 'user "bob" cannot get pods/log')
    r = ctl("logs", "web")
    assert r.code == 1 and r.err.startswith("Error from server (Forbidden): ")
    r = ctl("logs", "web", "-c", "a", "b")
    assert r.code == 1


def test_logs_agent_unreachable_names_node_and_address(ctl: Ctl) -> None:
    port = free_port()  # nothing listens there
    node(ctl, "n1", port)
    pod(ctl, "web")
    r = ctl("logs", "web")
    assert r.code == 1
    assert r.err.startswith(f"error: cannot reach the agent of node n1 at 127.0.0.1:{port}: ")
    ctl.client.create("Node", {"metadata": {"name": "bare"}, "status": {}})
    pod(ctl, "lost", node_name="bare")
    r = ctl("logs", "lost")
    assert (r.code, r.err) == (1, "error: node bare reports no InternalIP or Hostname\n")


def test_agent_address_forms() -> None:
    def n(addresses: list[dict[str, str]], port: int | None = None) -> dict[str, Any]:
        st: dict[str, Any] = {"addresses": addresses}
        if port:
            st["daemonEndpoints"] = {"kubeletEndpoint": {"Port": port}}
        return {"metadata": {"name": "x"}, "status": st}

    assert agent_address(n([{"type": "Hostname", "address": "h1"}])) == "h1:10250"
    both = [
        {"type": "Hostname", "address": "h1"},
        {"type": "InternalIP", "address": "10.0.0.2"},
    ]
    assert agent_address(n(both, 11250)) == "10.0.0.2:11250"
    assert agent_address(n([{"type": "InternalIP", "address": "fd00::2"}])) == "[fd00::2]:10250"
