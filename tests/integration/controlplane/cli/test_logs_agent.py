"""skiffctl logs and top against a real control plane and the agent's real endpoint.

A `skiff controlplane` process (SQLite, 127.0.0.1) holds a Node whose
address and port point at the agent's endpoint (`agent.stream_proxy` in
front of `agent.server`) served in this process on 127.0.0.1:0, TLS with a
serving certificate from the cluster CA. skiffctl reads pods/log and
nodes/stats from the API server, which calls the agent with its client
certificate. Logs are CRI log files the test writes under a temporary pod
log root, as the runtime's monitor would. `top` uses the in-test FakeAgent
behind the same kind of TLS (the real Stats needs a CRI runtime). skiffctl runs in-process with its real client
factory and once as a real process, so the bytes a user sees are checked.
"""

from __future__ import annotations

import dataclasses
import io
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import grpc
import pytest

from agent import serving_tls
from agent.cri_client import CRIClient
from agent.server import AgentServicer
from agent.stream_proxy import AgentEndpoint, serve_endpoint
from controlplane.apiserver.tls import ensure_pki, sign_agent_csr
from controlplane.client.agents import agent_csr
from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.config import load_config, write_config
from controlplane.client.informer import SharedInformer
from proto.agent.v1 import agent_pb2 as pb
from tests.fakes.fake_agent import FakeAgent
from tests.harness.agent_tls import agent_server_context
from tests.harness.controlplane import ControlPlane
from tests.harness.wait import wait_for

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[4]
NODE = "node-a"


@dataclass
class Done:
    code: int
    out: str
    err: str


@dataclass
class Setup:
    cp: ControlPlane
    client: GrpcApiClient
    log_root: Path
    port: int

    @property
    def config(self) -> str:
        return str(self.cp.data_dir / "admin.conf")

    def ctl(self, *args: str) -> Done:
        from controlplane.cli.main import main

        out, err = io.StringIO(), io.StringIO()
        code = main(["--config", self.config, *args], stdout=out, stderr=err)
        return Done(code, out.getvalue(), err.getvalue())


def node_body(name: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
            "allocatable": {"cpu": "4", "memory": "8Gi"},
        },
    }


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    base = Path(tmp_path_factory.mktemp("logs"))
    cp = ControlPlane(base / "data", ["--store", "sqlite"])
    cp.start()
    pods: SharedInformer | None = None
    endpoint: AgentEndpoint | None = None
    try:
        client = cp.client()
        pods = SharedInformer(cp.client(), "Pod", field_selector=f"spec.nodeName={NODE}")
        pods.start()
        assert pods.wait_for_sync(10)

        def lookup(ns: str, name: str) -> Any:
            return pods.store.get(name, ns) if pods is not None else None

        runtime = cast(CRIClient, None)  # not reached without --follow
        servicer = AgentServicer(NODE, lookup, runtime, base / "pods")
        tls = agent_server_context(cp.data_dir, NODE, base / "agent")
        endpoint = serve_endpoint(
            servicer, "127.0.0.1:0", lookup, runtime, tls, str(base / "agent" / "grpc.sock")
        )
        client.create("Node", node_body(NODE, endpoint.port))
        yield Setup(cp, client, base / "pods", endpoint.port)
    finally:
        if endpoint is not None:
            endpoint.stop()
        if pods is not None:
            pods.stop()
        cp.close()


def cri_line(stamp: str, stream: str, text: str) -> str:
    return f"{stamp} {stream} F {text}\n"


def make_pod(s: Setup, name: str, containers: tuple[str, ...] = ("app",)) -> dict[str, Any]:
    pod = s.client.create(
        "Pod",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "nodeName": NODE,
                "containers": [{"name": c, "image": "busybox"} for c in containers],
            },
        },
        "default",
    )
    uid = pod["metadata"]["uid"]
    for c in containers:
        d = s.log_root / f"default_{name}_{uid}" / c
        d.mkdir(parents=True)
        (d / "0.log").write_text(
            cri_line("2026-01-01T00:00:00.000000001Z", "stdout", f"{c} old run")
        )
        (d / "1.log").write_text(
            cri_line("2026-01-01T00:00:01.000000001Z", "stdout", f"{c} line 1")
            + cri_line("2026-01-01T00:00:02.000000002Z", "stderr", f"{c} warning \u00e9")
            + cri_line("2026-01-01T00:00:03.000000003Z", "stdout", f"{c} line 3")
        )
    return pod


def test_logs_through_the_real_agent_endpoint(setup: Setup) -> None:
    make_pod(setup, "web")
    wait_for(lambda: setup.ctl("logs", "web").code == 0, message="the agent to see the pod")
    r = setup.ctl("logs", "web")
    assert (r.code, r.out, r.err) == (0, "app line 1\napp warning \u00e9\napp line 3\n", "")
    assert setup.ctl("logs", "pod/web", "--tail=1").out == "app line 3\n"
    assert setup.ctl("logs", "web", "--previous").out == "app old run\n"
    r = setup.ctl("logs", "web", "--timestamps", "--tail", "1")
    assert r.out == "2026-01-01T00:00:03.000000003Z app line 3\n"
    r = setup.ctl("logs", "web", "-c", "nope")
    assert r.code == 1
    assert r.err.startswith("Error from server (BadRequest): container nope is not valid")

    make_pod(setup, "two", ("a", "b"))
    wait_for(lambda: setup.ctl("logs", "two", "-c", "b").code == 0)
    r = setup.ctl("logs", "two")
    assert r.err == 'Defaulted container "a" out of: a, b\n' and r.out.startswith("a line 1\n")

    # As a real process: the bytes on stdout, both streams merged as kubectl does.
    p = subprocess.run(
        [sys.executable, str(REPO / "skiff.py"), "ctl", "--config", setup.config, "logs", "web"],
        capture_output=True,
        timeout=60,
        cwd=REPO,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == "app line 1\napp warning \u00e9\napp line 3\n".encode()


def test_logs_refused_without_a_valid_token(setup: Setup, tmp_path: Path) -> None:
    """The API server judges skiffctl's token; the agent never sees it."""
    make_pod(setup, "locked")
    wait_for(lambda: setup.ctl("logs", "locked").code == 0)
    bad = tmp_path / "bad.conf"
    write_config(bad, dataclasses.replace(load_config(setup.config), token="not-the-token"))
    from controlplane.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code = main(["--config", str(bad), "logs", "locked"], stdout=out, stderr=err)
    assert code == 1 and "Unauthorized" in err.getvalue()


def test_logs_agent_down_and_top(setup: Setup, tmp_path: Path) -> None:
    pki = ensure_pki(setup.cp.data_dir)
    csr, key = agent_csr("node-b", ["127.0.0.1"])
    serving_tls.save(tmp_path, sign_agent_csr(pki, "node-b", csr), key)
    credentials = grpc.ssl_server_credentials(
        [((tmp_path / "serving.key").read_bytes(), (tmp_path / "serving.crt").read_bytes())],
        root_certificates=pki.ca_pem,
        require_client_auth=True,
    )
    fake = FakeAgent().start(credentials)
    try:
        setup.client.create("Node", node_body("node-b", fake.port))
        fake.stats = pb.StatsResponse(
            node=pb.NodeStats(
                node_name="node-b",
                usage=pb.Usage(
                    cpu_usage_nano_cores=1_000_000_000, memory_working_set_bytes=1 << 30
                ),
            )
        )
        r = setup.ctl("top", "nodes", "node-b")
        assert r.code == 0, r.err
        assert r.out.splitlines()[1].split() == ["node-b", "1000m", "25%", "1024Mi", "12%"]
        assert "authorization" not in fake.seen[-1].metadata  # no token reaches an agent
    finally:
        fake.stop()
    setup.client.create(
        "Pod",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "orphan"},
            "spec": {"nodeName": "node-b", "containers": [{"name": "app", "image": "busybox"}]},
        },
        "default",
    )
    r = setup.ctl("logs", "orphan")
    assert r.code == 1
    assert r.err.startswith(f"error: agent of node node-b at 127.0.0.1:{fake.port}")
