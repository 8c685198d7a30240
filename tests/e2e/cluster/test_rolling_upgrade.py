"""A rolling upgrade of a two-node cluster (issue 34): the control plane first, on a
data dir marked as the older storage format (migrated at start), then each agent in
turn; every pod keeps running throughout, the same container, never restarted (each
agent adopts its containers across its own restart)."""

from __future__ import annotations

import json
import signal
from typing import Any

import pytest

from controlplane.client.apiclient import GrpcApiClient
from controlplane.datadir import STORAGE_FORMAT
from tests.e2e.cluster.conftest import BUSYBOX
from tests.harness.cluster import Cluster
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.netns, pytest.mark.slow]

BACKEND = "host-gw"
NODES = 2


def sleeper(name: str, node: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "c", "image": BUSYBOX, "command": ["sleep", "3600"]}],
        },
    }


def running(api: GrpcApiClient, name: str) -> dict[str, Any] | None:
    pod = api.get("Pod", name, "default")
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    if pod["status"].get("phase") == "Running" and statuses and statuses[0].get("ready"):
        return pod
    return None


def test_control_plane_then_agents_with_pods_running(cluster: Cluster, api: GrpcApiClient) -> None:
    names = {f"up-{n.name}": n for n in cluster.nodes}
    for name, node in names.items():
        api.create("Pod", sleeper(name, node.name), "default")
    before = {}
    for name in names:
        pod = wait_for(lambda name=name: running(api, name), timeout=120,  # type: ignore[misc]
                       message=f"{name} Running")  # fmt: skip
        assert pod is not None
        before[name] = (
            pod["metadata"]["uid"],
            pod["status"]["containerStatuses"][0]["containerID"],
        )
    cp = cluster.cp
    version = cp.data_dir / "version.json"
    assert json.loads(version.read_text())["storageFormat"] == STORAGE_FORMAT

    # 1. The control plane, on the older format.
    cp.stop(signal.SIGTERM)
    version.unlink()
    cp.start()
    assert json.loads(version.read_text())["storageFormat"] == STORAGE_FORMAT
    assert "data directory migrated from storage format 1" in cp.log_tail(200000)
    # 2. Each agent in turn, the next once the last is Ready again.
    with cluster.client() as fresh:
        for node in cluster.nodes:
            assert node.agent is not None
            node.agent.stop(signal.SIGTERM)
            node.start_agent()
            node.wait_ready(fresh)
            for name, on in names.items():  # every pod still up, mid-rollout too
                assert on.exec(name, ["true"]) == ""
        for name in names:
            pod = wait_for(lambda name=name: running(fresh, name), timeout=60,  # type: ignore[misc]
                           message=f"{name} Running after the upgrade")  # fmt: skip
            assert pod is not None
            status = pod["status"]["containerStatuses"][0]
            assert (pod["metadata"]["uid"], status["containerID"]) == before[name]
            assert status["restartCount"] == 0
            fresh.delete("Pod", name, "default")
