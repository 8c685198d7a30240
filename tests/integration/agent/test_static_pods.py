"""Static pods: a real control plane process, a real agent, the in-memory CRI runtime.

A manifest in a temporary directory runs without anyone creating a Pod; its
mirror pod appears in the API with the static pod's status; a deleted mirror
comes back; an edited file replaces the pod, a removed one removes it; an
agent restart keeps the container; and with no control plane at all the
static pod still runs.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent.agent import Agent, AgentConfig
from agent.cri_client import CRIClient
from agent.node_status import NodeConfig
from agent.pod_config import POD_UID_LABEL, NodeSettings
from agent.static_pods import CONFIG_HASH, CONFIG_MIRROR
from controlplane.client import errors
from controlplane.client.apiclient import GrpcApiClient, connect, join
from controlplane.client.config import ClientConfig
from controlplane.client.interface import ApiClient
from proto.runtime.v1 import api_pb2 as cri
from tests.fakes.fake_runtime import FakeRuntime, serve_fake_runtime
from tests.harness.controlplane import ControlPlane
from tests.harness.wait import wait_for

pytestmark = pytest.mark.slow

MANIFEST = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox:1.36
"""


def agent_config(tmp_path: Path, manifests: Path) -> AgentConfig:
    return AgentConfig(
        node=NodeConfig(name="n1", address="127.0.0.1", fs_path=str(tmp_path)),
        root=tmp_path / "agent",
        pod_settings=NodeSettings(
            log_root=str(tmp_path / "logs"), node_name="n1", host_ip="127.0.0.1"
        ),
        network=None,
        resync_period=1.0,
        relist_period=0.2,
        lease_period=1.0,
        pod_manifest_path=manifests,
        static_period=0.2,
    )


@dataclass
class Env:
    cp: ControlPlane
    fake: FakeRuntime
    creds: ClientConfig
    sock: Path
    manifests: Path
    tmp_path: Path

    def agent(self) -> tuple[Agent, GrpcApiClient, CRIClient]:
        api = connect(self.creds)
        runtime = CRIClient(f"unix://{self.sock}", timeout=5)
        agent = Agent(agent_config(self.tmp_path, self.manifests), api, runtime)
        agent.start()
        return agent, api, runtime


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    cp = ControlPlane(tmp_path / "cp", ["--store", "sqlite"]).start()
    sock_dir = Path(tempfile.mkdtemp(prefix="skstatic", dir="/tmp"))
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    try:
        with serve_fake_runtime(sock_dir / "cri.sock") as fake:
            token = (cp.data_dir / "join-token").read_text().strip()
            ca = (cp.data_dir / "pki" / "ca.crt").read_bytes()
            creds = join(f"127.0.0.1:{cp.port}", ca, token, "n1")
            yield Env(cp, fake, creds, sock_dir / "cri.sock", manifests, tmp_path)
    finally:
        cp.close()
        shutil.rmtree(sock_dir, ignore_errors=True)


def running_containers(fake: FakeRuntime, uid: str) -> list[str]:
    with fake.lock:
        sandboxes = {
            s.id for s in fake.sandboxes.values() if s.config.labels.get(POD_UID_LABEL) == uid
        }
        return [
            c.id
            for c in fake.containers.values()
            if c.sandbox_id in sandboxes and c.state == cri.CONTAINER_RUNNING
        ]


def mirror(admin: ApiClient) -> dict[str, Any] | None:
    try:
        return admin.get("Pod", "web-n1", "default")
    except errors.NotFound:
        return None


def running_mirror(admin: ApiClient, uid: str) -> dict[str, Any] | None:
    m = mirror(admin)
    if m is None or m["metadata"].get("deletionTimestamp"):
        return None
    if m["metadata"]["annotations"].get(CONFIG_MIRROR) != uid:
        return None
    return m if (m.get("status") or {}).get("phase") == "Running" else None


def wait_mirror(admin: ApiClient, uid: str, message: str) -> dict[str, Any]:
    m = wait_for(lambda: running_mirror(admin, uid), timeout=15, message=message)
    assert m is not None
    return m


def static_uid_of(agent: Agent) -> str:
    assert agent.static is not None
    pods = wait_for(agent.static.list, timeout=5, message="static pod read")
    return str(pods[0]["metadata"]["uid"])


def test_static_pod_lifecycle(env: Env) -> None:
    admin = env.cp.client()
    (env.manifests / "web.yaml").write_text(MANIFEST)
    agent, api, runtime = env.agent()
    try:
        uid = static_uid_of(agent)
        [cid] = wait_for(lambda: running_containers(env.fake, uid), timeout=10,
                         message="static pod's container running")  # fmt: skip

        m = wait_mirror(admin, uid, "mirror Running")
        md = m["metadata"]
        assert md["annotations"][CONFIG_HASH] == uid
        assert md["annotations"]["kubernetes.io/config.source"] == "file"
        assert md["uid"] != uid  # the API gives the mirror its own UID
        node = admin.get("Node", "n1")
        assert md["ownerReferences"][0]["kind"] == "Node"
        assert md["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
        assert m["status"]["containerStatuses"][0]["containerID"] == f"fake://{cid}"

        # a user deletes the mirror: it comes back, the container is untouched
        admin.delete("Pod", "web-n1", "default")
        wait_for(lambda: (running_mirror(admin, uid) or {}).get("metadata", {}).get("uid")
                 not in (None, md["uid"]), timeout=15, message="mirror recreated")  # fmt: skip
        assert running_containers(env.fake, uid) == [cid]
    finally:
        agent.stop()
        runtime.close()
        api.close()

    # an agent restart keeps the pod and its container
    creates = env.fake.call_names().count("CreateContainer")
    agent, api, runtime = env.agent()
    try:
        assert static_uid_of(agent) == uid
        wait_for(lambda: uid in agent.status._sent, timeout=10, message="restarted agent synced")
        assert running_containers(env.fake, uid) == [cid]
        assert env.fake.call_names().count("CreateContainer") == creates
        assert running_mirror(admin, uid) is not None

        # an edited file is a new pod: the old one is killed, the new one started
        (env.manifests / "web.yaml").write_text(MANIFEST.replace("1.36", "1.37"))
        new_uid = wait_for(lambda: static_uid_of(agent).replace(uid, ""), timeout=5,
                           message="edit noticed")  # fmt: skip
        wait_for(lambda: running_containers(env.fake, new_uid), timeout=10, message="new pod")
        wait_for(lambda: not running_containers(env.fake, uid), timeout=10, message="old killed")
        m = wait_mirror(admin, new_uid, "new mirror")
        assert m["spec"]["containers"][0]["image"] == "busybox:1.37"

        # a removed file removes the pod and its mirror
        (env.manifests / "web.yaml").unlink()

        def all_gone() -> bool:
            with env.fake.lock:
                empty = not env.fake.sandboxes and not env.fake.containers
            return empty and mirror(admin) is None

        wait_for(all_gone, timeout=15, message="pod and mirror removed")
    finally:
        agent.stop()
        runtime.close()
        api.close()


def test_static_pod_runs_without_the_control_plane(env: Env) -> None:
    """The agent starts while the control plane is down: the static pod runs at
    once, and its mirror appears when the control plane comes back."""
    (env.manifests / "web.yaml").write_text(MANIFEST)
    env.cp.stop()
    api = connect(env.creds)
    runtime = CRIClient(f"unix://{env.sock}", timeout=5)
    agent = Agent(agent_config(env.tmp_path, env.manifests), api, runtime)
    starting = threading.Thread(target=agent.start, daemon=True)
    starting.start()  # start() keeps retrying the registration meanwhile
    try:
        uid = static_uid_of(agent)
        wait_for(lambda: running_containers(env.fake, uid), timeout=10,
                 message="static pod running with no API server")  # fmt: skip
        env.cp.start()
        wait_mirror(env.cp.client(), uid, "mirror Running once the API is back")
    finally:
        agent.stop_event.set()
        starting.join(timeout=15)
        agent.stop()
        runtime.close()
        api.close()
