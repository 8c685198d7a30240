"""A ConfigMap or Secret edit reaches a running pod's volume through the
agent's watch of that one object (its node credential may watch what its
pods use, as Kubernetes' node authorizer allows), not at the sync period:
the agent here runs with a sync period of an hour. Before, the agent read
its pods' sources with a GET every sync period only, so the edit stayed out
of the pod for the whole hour.
"""

from __future__ import annotations

import base64
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.agent import Agent, AgentConfig
from agent.cri_client import CRIClient
from agent.node_status import NodeConfig
from agent.pod_config import NodeSettings
from controlplane.client.agents import agent_csr
from controlplane.client.apiclient import GrpcApiClient, connect, join_node
from tests.fakes.fake_runtime import serve_fake_runtime
from tests.harness.controlplane import ControlPlane
from tests.harness.mounts import unmount_all
from tests.harness.wait import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[GrpcApiClient, Agent]]:
    cp = ControlPlane(tmp_path / "cp", ["--store", "sqlite"]).start()
    sock_dir = Path(tempfile.mkdtemp(prefix="skagent", dir="/tmp"))
    try:
        with serve_fake_runtime(sock_dir / "cri.sock"):
            token = (cp.data_dir / "join-token").read_text().strip()
            ca = (cp.data_dir / "pki" / "ca.crt").read_bytes()
            csr, _ = agent_csr("n1", ["127.0.0.1"])
            creds, _ = join_node(f"127.0.0.1:{cp.port}", ca, token, "n1", csr)
            api = connect(creds)
            runtime = CRIClient(f"unix://{sock_dir}/cri.sock", timeout=5)
            cfg = AgentConfig(
                node=NodeConfig(name="n1", address="127.0.0.1", fs_path=str(tmp_path)),
                root=tmp_path / "agent",
                pod_settings=NodeSettings(
                    log_root=str(tmp_path / "logs"), node_name="n1", host_ip="127.0.0.1"
                ),
                network=None,
                resync_period=3600.0,
                relist_period=0.2,
                lease_period=1.0,
            )
            agent = Agent(cfg, api, runtime)
            agent.start()
            try:
                yield cp.client(), agent
            finally:
                agent.stop()
                runtime.close()
                api.close()
    finally:
        cp.close()
        unmount_all(tmp_path)
        shutil.rmtree(sock_dir, ignore_errors=True)


def test_an_edit_reaches_the_running_pod_through_the_watch(
    cluster: tuple[GrpcApiClient, Agent],
) -> None:
    admin, agent = cluster
    admin.create("ConfigMap", {"metadata": {"name": "cfg"}, "data": {"mode": "blue"}}, "default")
    admin.create(
        "Secret",
        {"metadata": {"name": "key"}, "data": {"k": base64.b64encode(b"\x00old").decode()}},
        "default",
    )
    pod: dict[str, Any] = {
        "metadata": {"name": "reader", "namespace": "default"},
        "spec": {
            "nodeName": "n1",
            "containers": [{"name": "c", "image": "busybox:1.36"}],
            "volumes": [
                {"name": "cfg", "configMap": {"name": "cfg"}},
                {"name": "key", "secret": {"secretName": "key"}},
            ],
        },
    }
    uid = admin.create("Pod", pod, "default")["metadata"]["uid"]
    wait_for(lambda: (admin.get("Pod", "reader", "default").get("status") or {}).get("phase")
             == "Running", timeout=20, message="pod Running")  # fmt: skip
    volumes = agent.cfg.root / "pods" / uid / "volumes"
    mode = volumes / "kubernetes.io~configmap" / "cfg" / "mode"
    key = volumes / "kubernetes.io~secret" / "key" / "k"
    assert mode.read_text() == "blue" and key.read_bytes() == b"\x00old"
    wait_for(lambda: agent.objects.has_synced("ConfigMap", "default", "cfg") and
             agent.objects.has_synced("Secret", "default", "key"), timeout=10,
             message="the agent's watches of the ConfigMap and the Secret")  # fmt: skip

    admin.patch("ConfigMap", "cfg", {"data": {"mode": "green"}}, "default")
    admin.patch("Secret", "key", {"data": {"k": base64.b64encode(b"\xffnew").decode()}}, "default")
    wait_for(lambda: mode.read_text() == "green", timeout=10, message="the ConfigMap edit")
    wait_for(lambda: key.read_bytes() == b"\xffnew", timeout=10, message="the Secret edit")

    # The pod gone, its objects are watched no more.
    admin.delete("Pod", "reader", "default")
    wait_for(lambda: not agent.objects.watched(), timeout=20, message="the watches ended")
