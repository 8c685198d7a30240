"""The agent against a real control plane process and the in-memory CRI runtime.

No root needed: the runtime is the fake, the network config is not written.
The agent joins with the cluster join token (a node credential), registers
its Node and Lease, runs a bound pod, restarts a crashed container, reports
status, and on deletion stops and removes everything in the runtime.
"""

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from agent import serving_tls
from agent.agent import Agent, AgentConfig
from agent.cri_client import CRIClient
from agent.node_status import NodeConfig
from agent.pod_config import NodeSettings
from controlplane.client import errors
from controlplane.client.agents import AgentTLS, agent_csr
from controlplane.client.apiclient import connect, join, join_node
from controlplane.client.config import load_config
from proto.agent.v1 import agent_pb2 as pb
from proto.agent.v1 import agent_pb2_grpc as pb_grpc
from proto.runtime.v1 import api_pb2 as cri
from tests.fakes.fake_runtime import FakeRuntime, serve_fake_runtime
from tests.harness.controlplane import ControlPlane
from tests.harness.mounts import unmount_all
from tests.harness.wait import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[ControlPlane, FakeRuntime, Agent]]:
    cp = ControlPlane(tmp_path / "cp", ["--store", "sqlite"]).start()
    sock_dir = Path(tempfile.mkdtemp(prefix="skagent", dir="/tmp"))
    try:
        with serve_fake_runtime(sock_dir / "cri.sock") as fake:
            token = (cp.data_dir / "join-token").read_text().strip()
            ca = (cp.data_dir / "pki" / "ca.crt").read_bytes()
            csr, key = agent_csr("n1", ["127.0.0.1"])
            creds, cert = join_node(f"127.0.0.1:{cp.port}", ca, token, "n1", csr)
            serving_tls.save(tmp_path / "agent", cert, key)  # as `skiff agent` does at join
            api = connect(creds)
            runtime = CRIClient(f"unix://{sock_dir}/cri.sock", timeout=5)
            cfg = AgentConfig(
                node=NodeConfig(name="n1", address="127.0.0.1", fs_path=str(tmp_path)),
                root=tmp_path / "agent",
                pod_settings=NodeSettings(
                    log_root=str(tmp_path / "logs"), node_name="n1", host_ip="127.0.0.1"
                ),
                network=None,
                resync_period=1.0,
                relist_period=0.2,
                lease_period=1.0,
                listen="127.0.0.1:0",
            )
            agent = Agent(cfg, api, runtime, api_config=creds)
            agent.start()
            try:
                yield cp, fake, agent
            finally:
                agent.stop()
                runtime.close()
                api.close()
    finally:
        cp.close()
        unmount_all(tmp_path)  # the agent's projected-token tmpfs mounts
        shutil.rmtree(sock_dir, ignore_errors=True)


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": "n1",
            "containers": [{"name": "c", "image": "busybox:1.36"}],
            "terminationGracePeriodSeconds": 3,
            **spec,
        },
    }


def test_node_registers_with_lease(cluster: Any) -> None:
    cp, _, _ = cluster
    admin = cp.client()
    node = wait_for(lambda: admin.get("Node", "n1"), timeout=10)
    conds = {c["type"]: c["status"] for c in node["status"]["conditions"]}
    assert conds["Ready"] == "True" and conds["MemoryPressure"] == "False"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "n1"
    assert node["status"]["nodeInfo"]["containerRuntimeVersion"] == "fake://0.1.0"
    assert int(node["status"]["capacity"]["pods"]) == 110
    lease = admin.get("Lease", "n1", "kube-node-lease")
    assert lease["spec"]["holderIdentity"] == "n1"
    # Its CSINode, as the kubelet writes it: named after the Node, owned by
    # it (deleting the Node takes it along), no CSI driver registered.
    csinode = wait_for(lambda: admin.get("CSINode", "n1"), timeout=10)
    assert csinode["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": node["metadata"]["uid"]}
    ]
    assert csinode["spec"]["drivers"] == []


def test_pod_runs_restarts_and_is_removed(cluster: Any) -> None:
    cp, fake, _ = cluster
    admin = cp.client()
    admin.create("Pod", pod("web"), "default")

    def running() -> dict[str, Any]:
        st: dict[str, Any] = admin.get("Pod", "web", "default").get("status") or {}
        return st if st.get("phase") == "Running" and st.get("podIP") else {}

    st = wait_for(running, timeout=15, message="pod web Running")
    assert st["containerStatuses"][0]["containerID"].startswith("fake://")
    assert {c["type"]: c["status"] for c in st["conditions"]}["Ready"] == "True"

    first = fake.container_by_name("c")[0]
    fake.exit_container(first.id, 2)

    def restarted() -> bool:
        st = admin.get("Pod", "web", "default")["status"]
        cs = st["containerStatuses"][0]
        return (
            cs["restartCount"] == 1
            and "running" in cs["state"]
            and cs["lastState"]["terminated"]["exitCode"] == 2
        )

    wait_for(restarted, timeout=15, message="container restarted once")

    admin.delete("Pod", "web", "default")

    def gone() -> bool:
        try:
            admin.get("Pod", "web", "default")
            return False
        except errors.NotFound:
            return not fake.sandboxes and not fake.containers

    wait_for(gone, timeout=20, message="pod deleted and runtime emptied")
    assert "StopContainer" in fake.call_names() and "RemovePodSandbox" in fake.call_names()


def test_image_pull_failure_reported(cluster: Any) -> None:
    cp, fake, _ = cluster
    fake.missing_images.add("missing:1")
    admin = cp.client()
    admin.create("Pod", pod("bad", containers=[{"name": "c", "image": "missing:1"}]), "default")

    def waiting_reason() -> str | None:
        st = admin.get("Pod", "bad", "default").get("status") or {}
        cs = (st.get("containerStatuses") or [{}])[0]
        reason = (cs.get("state") or {}).get("waiting", {}).get("reason")
        return str(reason) if reason else None

    wait_for(lambda: waiting_reason() in ("ErrImagePull", "ImagePullBackOff"), timeout=15)
    st = admin.get("Pod", "bad", "default")["status"]
    assert st["phase"] == "Pending"
    assert "manifest unknown" in st["containerStatuses"][0]["state"]["waiting"].get("message", "")


def test_logs_endpoint(cluster: Any, tmp_path: Path) -> None:
    cp, _, agent = cluster
    admin = cp.client()
    admin.create("Pod", pod("logme"), "default")
    seen: dict[str, Any] = wait_for(lambda: agent.pods.store.get("logme", "default") or {})
    cdir = tmp_path / "logs" / f"default_logme_{seen['metadata']['uid']}" / "c"
    cdir.mkdir(parents=True, exist_ok=True)
    (cdir / "0.log").write_text("2026-01-01T00:00:00Z stdout F before restart\n")
    (cdir / "1.log").write_text(
        "2026-01-01T00:00:01Z stdout F one\n2026-01-01T00:00:02Z stderr P tw\n2026-01-01T00:00:02Z stderr F o\n"
    )
    pki = cp.data_dir / "pki"
    tls = AgentTLS(*(
        (pki / f).read_bytes()
        for f in ("ca.crt", "apiserver-agent-client.crt", "apiserver-agent-client.key")
    ))  # fmt: skip
    # As the API server calls it: TLS, its client certificate, the node's name checked.
    with tls.channel(f"127.0.0.1:{agent.endpoint_port}", "n1") as ch:
        stub = pb_grpc.AgentStub(ch)
        chunks = list(stub.ContainerLogs(pb.LogsRequest(namespace="default", pod="logme")))
        assert [(c.stream, c.data) for c in chunks] == [("stdout", b"one\n"), ("stderr", b"two\n")]
        tail = list(
            stub.ContainerLogs(pb.LogsRequest(namespace="default", pod="logme", tail_lines=1))
        )
        assert [c.data for c in tail] == [b"two\n"]
        prev = list(
            stub.ContainerLogs(pb.LogsRequest(namespace="default", pod="logme", previous=True))
        )
        assert [c.data for c in prev] == [b"before restart\n"]
        with pytest.raises(grpc.RpcError) as err:
            list(stub.ContainerLogs(pb.LogsRequest(namespace="default", pod="nope")))
        assert err.value.code() == grpc.StatusCode.NOT_FOUND
    # Plain text, even with the admin's token, is refused.
    token = load_config(cp.data_dir / "admin.conf").token
    with grpc.insecure_channel(f"127.0.0.1:{agent.endpoint_port}") as ch:
        md = (("authorization", f"Bearer {token}"),)
        with pytest.raises(grpc.RpcError):
            list(
                pb_grpc.AgentStub(ch).ContainerLogs(
                    pb.LogsRequest(namespace="default", pod="logme"), metadata=md, timeout=5
                )
            )


def test_a_pod_that_does_not_fit_is_rejected_on_the_node(cluster: Any) -> None:
    """Node admission (issue 20): a pod bound by nodeName whose requests
    exceed the node's allocatable never starts; it ends Failed, OutOfcpu."""
    cp, fake, _ = cluster
    admin = cp.client()
    wait_for(lambda: admin.get("Node", "n1"), timeout=10)
    big = pod("big")
    big["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "4096"}}
    admin.create("Pod", big, "default")

    def failed() -> dict[str, Any]:
        st: dict[str, Any] = admin.get("Pod", "big", "default").get("status") or {}
        return st if st.get("phase") == "Failed" else {}

    st = wait_for(failed, timeout=15, message="pod big Failed")
    assert st["reason"] == "OutOfcpu", st
    assert "cpu" in st["message"]
    assert not fake.sandboxes and "RunPodSandbox" not in fake.call_names()


def test_an_evicted_pod_ends_failed_and_stays_stopped(cluster: Any) -> None:
    cp, fake, agent = cluster
    admin = cp.client()
    uid = admin.create("Pod", pod("victim"), "default")["metadata"]["uid"]
    wait_for(
        lambda: (
            (admin.get("Pod", "victim", "default").get("status") or {}).get("phase") == "Running"
        ),
        timeout=15,
    )
    done = agent.workers.fail(uid, "Evicted", "The node was low on resource: memory.")
    assert done.wait(15)
    st = wait_for(
        lambda: (lambda s: s if s.get("phase") == "Failed" else {})(
            admin.get("Pod", "victim", "default").get("status") or {}
        ),
        timeout=15,
    )
    assert st["reason"] == "Evicted" and "memory" in st["message"]
    assert not any(c.state == cri.CONTAINER_RUNNING for c in fake.containers.values())


def test_a_runtime_failing_image_fs_info_or_list_containers_is_a_node_condition(
    cluster: Any,
) -> None:
    """Bad input (issue 20): the fake runtime has no ImageFsInfo and then
    fails ListContainers; the agent reports both in a Node condition and
    keeps serving the pods it knows."""
    cp, fake, agent = cluster
    admin = cp.client()
    admin.create("Pod", pod("steady"), "default")
    wait_for(
        lambda: (
            (admin.get("Pod", "steady", "default").get("status") or {}).get("phase") == "Running"
        ),
        timeout=15,
    )
    fake.fail_next["ListContainers"] = (grpc.StatusCode.UNAVAILABLE, "runtime busy")
    agent.resources.container_gc()

    def reported() -> str:
        node = admin.get("Node", "n1")
        for c in node["status"]["conditions"]:
            if c["type"] == "ContainerRuntimeUnhealthy" and c["status"] == "True":
                return str(c["reason"])
        return ""

    reason = wait_for(reported, timeout=15, message="ContainerRuntimeUnhealthy")
    assert "ImageFsInfoFailed" in reason or "ListContainersFailed" in reason
    assert agent.resources.problems.keys() >= {"ImageFsInfoFailed"}
    assert (admin.get("Pod", "steady", "default").get("status") or {}).get("phase") == "Running"


def test_a_wedged_runtime_turns_the_node_not_ready(tmp_path: Path) -> None:
    """PLEG health (issue 20): no relist completes (ListContainers fails
    every time) for longer than the threshold (3 min in the kubelet, 2 s
    here): the Node goes NotReady with "PLEG is not healthy", and Ready
    again once the runtime answers."""
    cp = ControlPlane(tmp_path / "cp", ["--store", "sqlite"]).start()
    sock_dir = Path(tempfile.mkdtemp(prefix="skagent", dir="/tmp"))
    try:
        with serve_fake_runtime(sock_dir / "cri.sock") as fake:
            token = (cp.data_dir / "join-token").read_text().strip()
            ca = (cp.data_dir / "pki" / "ca.crt").read_bytes()
            creds = join(f"127.0.0.1:{cp.port}", ca, token, "n2")
            api = connect(creds)
            runtime = CRIClient(f"unix://{sock_dir}/cri.sock", timeout=5)
            cfg = AgentConfig(
                node=NodeConfig(name="n2", address="127.0.0.1", fs_path=str(tmp_path)),
                root=tmp_path / "agent",
                pod_settings=NodeSettings(log_root=str(tmp_path / "logs"), node_name="n2"),
                network=None,
                relist_period=0.2,
                lease_period=0.5,
                pleg_threshold=2.0,
            )
            agent = Agent(cfg, api, runtime, api_config=creds)
            agent.start()
            admin = cp.client()

            def ready() -> tuple[str, str]:
                node = admin.get("Node", "n2")
                c = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
                return str(c["status"]), str(c["message"])

            try:
                wait_for(lambda: ready()[0] == "True", timeout=15, message="Ready")
                fake.fail_always["ListContainers"] = (grpc.StatusCode.DEADLINE_EXCEEDED, "wedged")
                message = wait_for(
                    lambda: ready()[1] if ready()[0] == "False" else "",
                    timeout=20,
                    message="NotReady",
                )
                assert message.startswith("PLEG is not healthy: pleg was last seen active")
                assert "wedged" in message
                del fake.fail_always["ListContainers"]
                wait_for(lambda: ready()[0] == "True", timeout=15, message="Ready again")
            finally:
                agent.stop()
                runtime.close()
                api.close()
    finally:
        cp.close()
        shutil.rmtree(sock_dir, ignore_errors=True)
