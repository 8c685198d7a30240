"""kubectl logs and exec through the API server, which proxies them to the
node's real agent endpoint (agent.stream_proxy + agent.server, TLS with a
serving certificate from the cluster CA, the API server's client
certificate required) in front of the runtime's real streaming server (host
process backend: commands run as host processes, no root needed). The API
server reaches the agent with its own credential; kubectl only ever talks
to the API server."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from agent.cri_client import CRIClient
from agent.server import AgentServicer
from agent.stream_proxy import AgentEndpoint, serve_endpoint
from controlplane.client.errors import NotFound
from runtime.streaming import StreamingConfig, StreamingServer
from tests.fakes.stream_stack import CID, ServerRuntime
from tests.fakes.streaming_backend import HostProcessBackend
from tests.harness.agent_tls import agent_server_context
from tests.harness.kubectl import read_exec
from tests.harness.ports import free_port
from tests.harness.wait import wait_for
from tests.integration.rest.conftest import KUBECTL, Cluster

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("need_kubectl")]

NODE = "stream-node"


@dataclass
class Agent:
    endpoint: AgentEndpoint
    log_root: Path


@pytest.fixture(scope="module")
def agent(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agent]:
    registry = cluster.running.server.registry
    log_root = tmp_path_factory.mktemp("pods")

    def lookup(namespace: str, name: str) -> Any:
        try:
            return registry.get_object("Pod", name, namespace)
        except NotFound:
            return None

    backend = HostProcessBackend(env={"PATH": "/usr/bin:/bin", "LANG": "C"})
    backend.add_container(CID)
    config = StreamingConfig(port=0, stream_creation_timeout=5.0, drain_timeout=1.0, linger=2.0)
    root = tmp_path_factory.mktemp("agent")
    tls = agent_server_context(cluster.running.data_dir, NODE, root)
    with StreamingServer(backend, config) as server:
        servicer = AgentServicer(NODE, lookup, cast(CRIClient, None), log_root)
        endpoint = serve_endpoint(
            servicer, "127.0.0.1:0", lookup, ServerRuntime(server), tls, str(root / "grpc.sock")
        )
        try:
            registry.create("Node", {
                "metadata": {"name": NODE},
                "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                           "daemonEndpoints": {"kubeletEndpoint": {"Port": endpoint.port}}},
            })  # fmt: skip
            yield Agent(endpoint, log_root)
        finally:
            endpoint.stop()


def running_pod(cluster: Cluster, agent: Agent, name: str) -> None:
    pod = cluster.running.server.registry.create(
        "Pod",
        {"metadata": {"name": name, "namespace": "default"},
         "spec": {"nodeName": NODE, "containers": [{"name": "app", "image": "busybox"}]}},
    )  # fmt: skip
    uid = json.loads(pod[0])["metadata"]["uid"]
    cluster.running.server.registry.patch(
        "Pod", name, {"status": {"phase": "Running"}}, "default", "status"
    )
    logs = agent.log_root / f"default_{name}_{uid}" / "app"
    logs.mkdir(parents=True)
    (logs / "0.log").write_text(
        "2026-01-01T00:00:01.000000001Z stdout F first line\n"
        "2026-01-01T00:00:02.000000002Z stderr F second line\n"
    )


def test_logs_through_the_api_server(cluster: Cluster, agent: Agent) -> None:
    running_pod(cluster, agent, "logged")
    wait_for(lambda: cluster.kubectl("logs", "logged", check=False).returncode == 0,
             timeout=20, message="the agent to serve the pod's log")  # fmt: skip
    assert cluster.kubectl("logs", "logged").stdout == "first line\nsecond line\n"
    assert cluster.kubectl("logs", "logged", "--tail=1").stdout == "second line\n"
    bad = cluster.kubectl("logs", "logged", "-c", "nope", check=False)
    assert bad.returncode != 0 and "container nope is not valid" in bad.stderr


def test_exec_through_the_api_server(cluster: Cluster, agent: Agent) -> None:
    running_pod(cluster, agent, "shell")
    done = read_exec(lambda: cluster.kubectl(  # kubectl 1.33 may drop a quick command's output
        "exec", "shell", "--", "sh", "-c", "echo out; echo err >&2; exit 3", check=False))  # fmt: skip
    assert done.stdout == "out\n" and "err" in done.stderr and done.returncode == 3
    done = cluster.kubectl("exec", "-i", "shell", "--", "cat", input="piped\n")
    assert done.stdout == "piped\n"


def test_port_forward_through_the_api_server(cluster: Cluster, agent: Agent) -> None:
    assert KUBECTL is not None
    running_pod(cluster, agent, "served")
    with socket.create_server(("127.0.0.1", 0)) as upstream:
        remote = upstream.getsockname()[1]

        def echo_once() -> None:
            conn, _ = upstream.accept()
            with conn:
                conn.sendall(conn.recv(100).upper())

        threading.Thread(target=echo_once, daemon=True).start()
        local = free_port()
        proc = subprocess.Popen(
            [KUBECTL, "port-forward", "pod/served", f"{local}:{remote}"],
            stdout=subprocess.PIPE, text=True, env=cluster.env(),
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            assert "Forwarding from" in proc.stdout.readline()
            with socket.create_connection(("127.0.0.1", local), timeout=10) as client:
                client.sendall(b"hello")
                assert client.recv(100) == b"HELLO"
        finally:
            proc.kill()
            proc.wait()
