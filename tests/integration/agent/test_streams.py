"""skiffctl exec and port-forward through the API server and a real agent to a
runtime's streaming server.

A `skiff controlplane` process (SQLite, 127.0.0.1), the agent (agent.agent)
against the in-memory fake CRI runtime, and the agent's streaming endpoint
(agent.stream_proxy, TLS with the serving certificate issued at join) on the
port the Node advertises, sharing it with the agent's gRPC endpoint
(AgentServicer) as `serve_endpoint` starts them. skiffctl talks to the API
server only; the API server calls the agent with its client certificate. The
fake runtime's Exec/Attach/PortForward hand out URLs of runtime.streaming's
server with its host-process backend, so commands run as host processes
and port-forward dials 127.0.0.1 here; no root needed. skiffctl runs
in-process for exec and as a real process for port-forward (stopped with
SIGINT by its pid).
"""

from __future__ import annotations

import http.server
import io
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from agent import serving_tls
from agent.agent import Agent, AgentConfig
from agent.cri_client import CRIClient
from agent.node_status import NodeConfig
from agent.pod_config import NodeSettings
from agent.server import AgentServicer
from agent.stream_proxy import StreamProxy, serve_endpoint
from controlplane.cli.main import main
from controlplane.cli.streamclient import UpgradeRefused, upgrade
from controlplane.client.agents import AgentTLS, agent_csr, node_stats
from controlplane.client.apiclient import connect, join_node
from controlplane.client.config import ClientConfig, load_config
from machinery.streaming.remotecommand import SPDY_PROTOCOLS
from proto.agent.v1 import agent_pb2 as pb
from proto.agent.v1 import agent_pb2_grpc as pb_grpc
from runtime.streaming import StreamingConfig, StreamingServer
from tests.fakes.fake_runtime import FakeRuntime, serve_fake_runtime
from tests.fakes.streaming_backend import HostProcessBackend
from tests.harness.mounts import unmount_all
from tests.harness.wait import wait_for
from tests.integration.controlplane.conftest import ControlPlane

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]


@dataclass
class Cluster:
    cp: ControlPlane
    fake: FakeRuntime
    backend: HostProcessBackend
    agent: Agent
    proxy: StreamProxy
    node_creds: ClientConfig
    log_root: Path

    @property
    def config(self) -> str:
        return str(self.cp.data_dir / "admin.conf")

    def ctl(self, *args: str, stdin: str = "") -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = main(
            ["--config", self.config, *args], stdout=out, stderr=err, stdin=io.StringIO(stdin)
        )
        return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("streams"))
    cp = ControlPlane(base / "cp", ["--store", "sqlite"]).start()
    sock_dir = Path(tempfile.mkdtemp(prefix="skstreams", dir="/tmp"))
    backend = HostProcessBackend(env={"PATH": "/usr/bin:/bin", "LANG": "C"})
    config = StreamingConfig(port=0, stream_creation_timeout=5.0, drain_timeout=1.0, linger=2.0)
    try:
        with (
            StreamingServer(backend, config) as streaming,
            serve_fake_runtime(sock_dir / "cri.sock") as fake,
        ):
            fake.streaming = streaming
            token = (cp.data_dir / "join-token").read_text().strip()
            ca = (cp.data_dir / "pki" / "ca.crt").read_bytes()
            csr, key = agent_csr("n1", ["127.0.0.1"])
            creds, cert = join_node(f"127.0.0.1:{cp.port}", ca, token, "n1", csr)
            serving_tls.save(base / "agent", cert, key)
            api = connect(creds)
            runtime = CRIClient(f"unix://{sock_dir}/cri.sock", timeout=5)
            holder: dict[str, Agent] = {}

            def pods(ns: str, name: str) -> Any:
                return holder["agent"].pods.store.get(name, ns)

            # As the agent is meant to run it: the streaming endpoint on the
            # advertised port (TLS), the gRPC servicer relayed to a unix socket.
            tls = serving_tls.server_context(base / "agent", ca)
            servicer = AgentServicer("n1", pods, runtime, base / "logs")
            endpoint = serve_endpoint(
                servicer, "127.0.0.1:0", pods, runtime, tls, str(base / "agent" / "grpc.sock")
            )
            cfg = AgentConfig(
                node=NodeConfig(
                    name="n1", address="127.0.0.1", fs_path=str(base), agent_port=endpoint.port
                ),
                root=base / "agent",
                pod_settings=NodeSettings(
                    log_root=str(base / "logs"), node_name="n1", host_ip="127.0.0.1"
                ),
                network=None,
                resync_period=1.0,
                relist_period=0.2,
                lease_period=1.0,
            )
            agent = holder["agent"] = Agent(cfg, api, runtime, api_config=creds)
            agent.start()
            try:
                yield Cluster(cp, fake, backend, agent, endpoint.proxy, creds, base / "logs")
            finally:
                endpoint.stop()
                agent.stop()
                runtime.close()
                api.close()
    finally:
        backend.close()
        cp.close()
        unmount_all(base)  # the agent's projected-token tmpfs mounts
        shutil.rmtree(sock_dir, ignore_errors=True)


def running_pod(c: Cluster, name: str) -> str:
    """Create a one-container pod, wait for Running; the container is made known
    to the host-process backend. Returns the container id."""
    admin = c.cp.client()
    admin.create(
        "Pod",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox:1.36"}]},
        },
        "default",
    )

    def running() -> bool:
        st = admin.get("Pod", name, "default").get("status") or {}
        return st.get("phase") == "Running" and c.agent.pods.store.get(name, "default") is not None

    wait_for(running, timeout=15, message=f"pod {name} Running")
    uid = admin.get("Pod", name, "default")["metadata"]["uid"]
    [container] = [
        x for x in c.fake.containers.values() if x.config.labels.get("io.kubernetes.pod.uid") == uid
    ]
    c.backend.add_container(container.id)
    return container.id


def test_exec_prints_and_exits_with_the_command_code(cluster: Cluster) -> None:
    cid = running_pod(cluster, "web")
    assert cluster.ctl("exec", "web", "--", "echo", "hi") == (0, "hi\n", "")
    code, out, err = cluster.ctl(
        "exec", "-i", "web", "-c", "c", "--", "sh", "-c", "cat; exit 3", stdin="in\n"
    )
    assert (code, out) == (3, "in\n")
    assert "command terminated with exit code 3" in err
    execs = [req for name, req in cluster.fake.calls if name == "Exec"]
    assert execs[-1].container_id == cid and list(execs[-1].cmd) == ["sh", "-c", "cat; exit 3"]


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello through the pod"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_port_forward_to_a_local_http_server(cluster: Cluster) -> None:
    running_pod(cluster, "fwd")
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    serving = threading.Thread(target=web.serve_forever, daemon=True)
    serving.start()
    remote = web.server_address[1]
    argv = [sys.executable, "-m", "controlplane.cli.main", "--config", cluster.config]
    proc = subprocess.Popen(
        [*argv, "port-forward", "pod/fwd", f":{remote}"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("Forwarding from 127.0.0.1:") and line.endswith(f" -> {remote}\n")
        local = int(line.split()[2].rsplit(":", 1)[1])
        for _ in range(2):
            with urllib.request.urlopen(f"http://127.0.0.1:{local}/", timeout=10) as resp:
                assert resp.read() == b"hello through the pod"
        assert proc.stdout.readline() == f"Handling connection for {local}\n"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(15)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            web.shutdown()
            web.server_close()
            serving.join()
    assert code == 0, proc.stderr.read() if proc.stderr else ""
    forwards = [req for name, req in cluster.fake.calls if name == "PortForward"]
    assert list(forwards[-1].port) == [remote]


def test_tokens_and_plain_text_are_refused(cluster: Cluster) -> None:
    """Even the admin's token opens nothing at the agent: it serves TLS to the
    API server's certificate only."""
    running_pod(cluster, "guarded")
    path = "/exec/default/guarded/c?command=echo&command=hi&stdout=1"
    address = f"127.0.0.1:{cluster.proxy.port}"
    admin = load_config(cluster.cp.data_dir / "admin.conf").token
    for token in (admin, cluster.node_creds.token):
        with pytest.raises((UpgradeRefused, OSError)):
            upgrade(address, path, token, SPDY_PROTOCOLS).close()


def test_grpc_shares_the_advertised_port(cluster: Cluster) -> None:
    running_pod(cluster, "logged")
    uid = cluster.cp.client().get("Pod", "logged", "default")["metadata"]["uid"]
    cdir = cluster.log_root / f"default_logged_{uid}" / "c"
    cdir.mkdir(parents=True, exist_ok=True)
    (cdir / "0.log").write_text("2026-01-01T00:00:00Z stdout F logged line\n")
    assert cluster.ctl("logs", "logged") == (0, "logged line\n", "")
    pki = cluster.cp.data_dir / "pki"
    tls = AgentTLS(
        (pki / "ca.crt").read_bytes(),
        (pki / "apiserver-agent-client.crt").read_bytes(),
        (pki / "apiserver-agent-client.key").read_bytes(),
    )
    reply = node_stats(f"127.0.0.1:{cluster.proxy.port}", "n1", tls, timeout=10)
    assert reply.node.node_name == "n1"
    with (
        grpc.insecure_channel(f"127.0.0.1:{cluster.proxy.port}") as channel,
        pytest.raises(grpc.RpcError),
    ):
        pb_grpc.AgentStub(channel).Stats(pb.StatsRequest(), timeout=5)
