"""The batch scheduler's volume plugins on a real control plane with hollow nodes.

A Volcano Job whose task mounts a claim of the local-path class (bound
WaitForFirstConsumer): the batch scheduler places the gang where the claim
can be provisioned (only nodes whose agent runs the local-path provisioner),
annotates the claim with the chosen node, the PV controller provisions a
volume pinned to it, and the pods are bound there once the claim is Bound.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agent.hollow import HollowConfig, HollowNodes
from controlplane import main as cp_main
from controlplane.api import volcano
from controlplane.api import volumes as v
from controlplane.client.apiclient import GrpcApiClient, connect
from tests.harness.hollow import wait_schedulable
from tests.harness.wait import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GrpcApiClient]:
    base = tmp_path_factory.mktemp("volcano-volumes")
    args = cp_main.build_parser().parse_args(
        ["--listen", "127.0.0.1:0", "--data-dir", str(base / "cp"), "--controllers", "*,-podgc"]
    )
    running = cp_main.start(args)
    client = connect(running.admin, timeout=30)
    # Two nodes without the provisioner, one with it.
    plain = HollowNodes(client, HollowConfig(nodes=2, cpu="4", memory="16Gi", prefix="vp"))
    local = HollowNodes(
        client,
        HollowConfig(
            nodes=1, cpu="4", memory="16Gi", prefix="vl", local_path_root=str(base / "lp")
        ),
    )
    try:
        plain.start()
        local.start()
        wait_schedulable(client, 3)
        yield client
    finally:
        local.stop()
        plain.stop()
        client.close()
        running.stop()


def job_with_claim(name: str, replicas: int) -> dict[str, Any]:
    claim = {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": v.LOCAL_PATH_CLASS,
        "resources": {"requests": {"storage": "1Gi"}},
    }
    return {
        "apiVersion": volcano.BATCH_API,
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "minAvailable": replicas,
            "schedulerName": "volcano",
            "volumes": [{"mountPath": "/data", "volumeClaim": claim}],
            "tasks": [{
                "name": "t", "replicas": replicas,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{
                    "name": "c", "image": "busybox",
                    "resources": {"requests": {"cpu": "1"}}}]}},
            }],
        },
    }  # fmt: skip


def test_wait_for_first_consumer_claim_is_provisioned_on_the_chosen_node(
    api: GrpcApiClient,
) -> None:
    sc = api.get("StorageClass", v.LOCAL_PATH_CLASS)
    assert sc["volumeBindingMode"] == "WaitForFirstConsumer"
    api.create(volcano.JOB_KEY, job_with_claim("vols", 2), "default")

    def pods() -> list[dict[str, Any]]:
        return [
            p
            for p in api.list("Pod", "default").items
            if (p["metadata"].get("labels") or {}).get(volcano.JOB_NAME) == "vols"
        ]

    wait_for(
        lambda: len(pods()) == 2 and all(p["spec"].get("nodeName") for p in pods()),
        timeout=60,
        message="the gang bound",
    )
    assert {p["spec"]["nodeName"] for p in pods()} == {"vl-00000"}
    [claim] = [
        c
        for c in api.list("PersistentVolumeClaim", "default").items
        if c["metadata"]["name"].startswith("vols-")
    ]
    assert claim["metadata"]["annotations"][v.SELECTED_NODE_ANNOTATION] == "vl-00000"
    assert claim["status"]["phase"] == "Bound"
    volume = api.get("PersistentVolume", claim["spec"]["volumeName"])
    assert volume["spec"]["nodeAffinity"] == v.node_affinity_for("vl-00000")
    wait_for(
        lambda: (
            api.get(volcano.JOB_KEY, "vols", "default")["status"]["state"]["phase"] == "Running"
        ),
        timeout=60,
        message="the job Running",
    )
    api.delete(volcano.JOB_KEY, "vols", "default")
    wait_for(lambda: not pods(), timeout=30, message="pods of vols gone")
