"""A pod's ServiceAccount credentials, end to end (issue 16): the agent
projects a bound token, the cluster CA and the namespace at
/var/run/secrets/kubernetes.io/serviceaccount, where in-cluster clients
look, and the token authenticates as the pod's ServiceAccount."""

from __future__ import annotations

import pytest

from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import ClientConfig
from tests.e2e.agent.helpers import E2EImages, pod, wait_running
from tests.harness.nodeprocs import Node
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def test_pod_gets_a_working_service_account_token(
    node: Node, admin: GrpcApiClient, e2e_images: E2EImages
) -> None:
    out = node.base / "sa-out"
    out.mkdir()
    script = (f"for f in token ca.crt namespace; do cat {SA_DIR}/$f > /out/$f.tmp && "
              f"mv /out/$f.tmp /out/$f; done; sleep 3600")  # fmt: skip
    admin.create(
        "Pod",
        pod("sa-reader", node,
            [{"name": "c", "image": e2e_images.busybox, "command": ["sh", "-c", script],
              "volumeMounts": [{"name": "out", "mountPath": "/out"}]}],
            volumes=[{"name": "out", "hostPath": {"path": str(out)}}]),
        "default",
    )  # fmt: skip
    wait_running(admin, "sa-reader")
    wait_for(lambda: (out / "namespace").exists(), timeout=30, message="files copied out")
    assert (out / "namespace").read_text() == "default"
    config = admin.config
    assert (out / "ca.crt").read_bytes().strip() == config.ca_pem.strip()
    token = (out / "token").read_text()
    with connect(ClientConfig(config.server, config.ca_pem, token)) as sa:
        assert sa.whoami()["user"] == "system:serviceaccount:default:default"
    admin.delete("Pod", "sa-reader", "default")
