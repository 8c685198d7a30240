"""Issue 33 where more than one node matters: on a worker that is not the
first node, whose agent reaches the API server with its own node
credential (the node authorizer lets it read only what its pods use):

- a ConfigMap edit and a Secret's binary bytes reach the running pod's
  volume, which the agent keeps through a watch it may open only for an
  object a pod of its node references;
- `kubectl debug` (kubectl 1.33) adds an ephemeral container that shares
  the target's processes, and `kubectl logs` reads it, through the API
  server's streaming proxy to that node's agent;
- a native sidecar starts before the app, and is started and running
  beside it.

And issue 32's node credentials: every agent, having joined with the join
token, proves who it is with a client certificate from the
CertificateSigningRequest API, and its node stays Ready on it.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography import x509

from agent.agent import RESYNC_PERIOD as SYNC_PERIOD
from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.config import load_config
from tests.e2e.cluster.conftest import BUSYBOX
from tests.harness.cluster import Cluster, ClusterNode
from tests.harness.kubectl import NEWEST
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.netns, pytest.mark.slow]

NS = "kubelet-e2e"


@pytest.fixture(scope="module")
def worker(cluster: Cluster, api: GrpcApiClient) -> Iterator[ClusterNode]:
    """The last node; the test namespace is removed afterwards."""
    if not NEWEST.exists():
        pytest.skip(f"kubectl is not installed at {NEWEST}")
    api.create("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    try:
        yield cluster.nodes[-1]
    finally:
        api.delete("Namespace", NS)


def kubectl(
    cluster: Cluster, *args: str, input: str | None = None, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    kubeconfig = cluster.cp.data_dir / "kubeconfig"
    done = subprocess.run(
        [str(NEWEST), "--kubeconfig", str(kubeconfig), "-n", NS, *args],
        input=input, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stdout}{done.stderr}"
    return done


def pod(name: str, node: str, containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
                 "containers": containers, **spec},
    }  # fmt: skip


def container(name: str, script: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": BUSYBOX, "command": ["sh", "-c", script], **extra}


def running(api: GrpcApiClient, name: str) -> dict[str, Any]:
    def ready() -> dict[str, Any]:
        p: dict[str, Any] = api.get("Pod", name, NS)
        return p if (p.get("status") or {}).get("phase") == "Running" else {}

    return wait_for(ready, timeout=120, interval=0.3, message=f"{NS}/{name} Running")


def test_live_configmap_and_binary_secret_on_a_worker(
    cluster: Cluster, api: GrpcApiClient, worker: ClusterNode
) -> None:
    blob = os.urandom(4096)
    api.create("ConfigMap", {"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "settings", "namespace": NS},
                             "data": {"mode": "blue"}}, NS)  # fmt: skip
    api.create("Secret", {"apiVersion": "v1", "kind": "Secret",
                          "metadata": {"name": "keystore", "namespace": NS},
                          "data": {"ks": base64.b64encode(blob).decode()}}, NS)  # fmt: skip
    mounts = [{"name": "cfg", "mountPath": "/etc/app"}, {"name": "sec", "mountPath": "/etc/sec"}]
    api.create("Pod", pod("reader", worker.name, [container("c", "sleep 3600", volumeMounts=mounts)],
                          volumes=[{"name": "cfg", "configMap": {"name": "settings"}},
                                   {"name": "sec", "secret": {"secretName": "keystore"}}]), NS)  # fmt: skip
    running(api, "reader")
    assert worker.exec("reader", ["cat", "/etc/app/mode"], NS) == "blue"
    digest = worker.exec("reader", ["sha256sum", "/etc/sec/ks"], NS).split()[0]
    assert digest == hashlib.sha256(blob).hexdigest()  # byte for byte

    api.patch("ConfigMap", "settings", {"data": {"mode": "green"}}, NS)
    wait_for(lambda: worker.exec("reader", ["cat", "/etc/app/mode"], NS) == "green",
             timeout=SYNC_PERIOD + 10, interval=0.5,
             message=f"the edit in the pod on {worker.name}")  # fmt: skip


def test_kubectl_debug_on_a_worker(
    cluster: Cluster, api: GrpcApiClient, worker: ClusterNode
) -> None:
    api.create("Pod", pod("web", worker.name, [container("app", "sleep 3600")]), NS)
    running(api, "web")
    done = kubectl(cluster, "debug", "web", "-i", f"--image={BUSYBOX}", "--target=app",
                   "-c", "dbg", "--", "sh", input="ps -o pid,args\nexit\n")  # fmt: skip
    assert "sleep 3600" in done.stdout, done.stdout + done.stderr  # the target's processes

    def terminated() -> dict[str, Any]:
        got = api.get("Pod", "web", NS).get("status") or {}
        for s in got.get("ephemeralContainerStatuses") or []:
            if s["name"] == "dbg":
                return dict(s.get("state", {}).get("terminated") or {})
        return {}

    st = wait_for(terminated, timeout=30, interval=0.3, message="dbg terminated")
    assert st["exitCode"] == 0
    assert "sleep 3600" in kubectl(cluster, "logs", "web", "-c", "dbg").stdout
    assert api.get("Pod", "web", NS)["spec"]["nodeName"] == worker.name


def test_native_sidecar_on_a_worker(
    cluster: Cluster, api: GrpcApiClient, worker: ClusterNode
) -> None:
    shared = [{"name": "x", "mountPath": "/x"}]
    # The shell opens /x/side before date writes it, so "started" (the container
    # running) does not mean written: as in Kubernetes, a startup probe is what
    # holds the app back until the sidecar has done its part.
    written = {"exec": {"command": ["test", "-s", "/x/side"]}, "periodSeconds": 1}
    sidecar = container("side", "date +%s%N > /x/side; sleep 3600", restartPolicy="Always",
                        volumeMounts=shared, startupProbe=written)  # fmt: skip
    app = container("app", "cat /x/side > /x/seen && sleep 3600", volumeMounts=shared)
    api.create("Pod", pod("withside", worker.name, [app], initContainers=[sidecar],
                          volumes=[{"name": "x", "emptyDir": {}}]), NS)  # fmt: skip
    got = running(api, "withside")
    init = got["status"]["initContainerStatuses"][0]
    assert init["name"] == "side" and init["started"] is True and "running" in init["state"]
    app_status = got["status"]["containerStatuses"][0]
    assert "running" in app_status["state"]
    # The app found the sidecar's file: the sidecar ran first.
    assert worker.exec("withside", ["cat", "/x/seen"], NS) == worker.exec(
        "withside", ["cat", "/x/side"], NS
    )


def test_every_agent_uses_a_client_certificate(cluster: Cluster, api: GrpcApiClient) -> None:
    def certificate(node: ClusterNode) -> x509.Certificate | None:
        cfg = load_config(node.base / "agent" / "node.conf")
        return x509.load_pem_x509_certificate(cfg.cert_pem) if cfg.cert_pem else None

    for node in cluster.nodes:
        cert = wait_for(lambda n=node: certificate(n), timeout=60, interval=0.5,  # type: ignore[misc]
                        message=f"{node.name}'s client certificate")  # fmt: skip
        assert cert is not None
        assert cert.subject.rfc4514_string() == f"CN=system:node:{node.name},O=system:nodes"
        assert cert.not_valid_after_utc - datetime.datetime.now(datetime.UTC) < datetime.timedelta(
            days=366
        )
        csrs = [c for c in api.list("CertificateSigningRequest").items
                if c["spec"]["username"] == f"system:node:{node.name}"]  # fmt: skip
        assert csrs, f"no CSR from {node.name}"
    # Lease renewals keep coming on the certificates.
    before = {n.name: _renewed(api, n.name) for n in cluster.nodes}
    wait_for(lambda: all(_renewed(api, n) > t for n, t in before.items()), timeout=90,
             interval=0.5, message="every node's Lease renewed after the switch")  # fmt: skip


def _renewed(api: GrpcApiClient, node: str) -> str:
    return str(api.get("Lease", node, "kube-node-lease")["spec"].get("renewTime") or "")
