"""Storage on a three-node cluster with real agents and runtimes: local-path
volumes that keep their data across pods, StatefulSet claims per ordinal,
reclaim Retain and Delete, WaitForFirstConsumer following the pod, and a
ReadWriteOnce conflict explained in "why pending".

Every volume lives under the node's agent directory (the default
local-path root), which the cluster harness removes with the node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controlplane.api import volumes as v
from controlplane.client import errors
from controlplane.client.apiclient import GrpcApiClient
from controlplane.scheduler.explain import describe_scheduling
from tests.harness import cluster_workloads as h
from tests.harness.cluster import Cluster
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.netns, pytest.mark.slow]

BACKEND = "host-gw"
# Writes its name into the volume once, then keeps it; a TERM ends it at once.
KEEPER = [
    "sh",
    "-c",
    "[ -f /data/id ] || hostname > /data/id; trap 'exit 0' TERM; while true; do sleep 1; done",
]


def claim(name: str, size: str = "32Mi", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
            **spec,
        },
    }


def claim_pod(name: str, claim_name: str, **spec: Any) -> dict[str, Any]:
    body = h.pod(name, KEEPER)
    body["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    body["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]
    body["spec"].update(spec)
    return body


def gone(api: GrpcApiClient, kind: str, name: str, ns: str | None = "default") -> bool:
    try:
        api.get(kind, name, ns)
        return False
    except errors.NotFound:
        return True


def written_id(cluster: Cluster, pod: dict[str, Any]) -> str:
    """What the pod's KEEPER wrote into /data/id, once it has (Ready comes first)."""
    node = cluster.node(pod["spec"]["nodeName"])
    name = pod["metadata"]["name"]
    text: str = wait_for(
        lambda: node.exec(name, ["cat", "/data/id"]).strip(), timeout=20, message=f"{name} wrote"
    )
    return text


def volume_of(api: GrpcApiClient, claim_name: str) -> dict[str, Any]:
    pvc = api.get("PersistentVolumeClaim", claim_name, "default")
    return api.get("PersistentVolume", pvc["spec"]["volumeName"], None)


def test_pod_recreated_on_the_same_node_reads_its_data(
    cluster: Cluster, api: GrpcApiClient
) -> None:
    api.create("PersistentVolumeClaim", claim("again"), "default")
    deploy = h.deployment("again", 1, KEEPER)
    spec = deploy["spec"]["template"]["spec"]
    spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "again"}}]
    api.create("Deployment", deploy, "default")
    try:
        first = h.wait_ready_pods(api, {"app": "again"}, 1)[0]
        node = first["spec"]["nodeName"]
        assert written_id(cluster, first) == first["metadata"]["name"]
        api.delete("Pod", first["metadata"]["name"], "default")

        def replaced() -> list[dict[str, Any]]:
            pods = h.ready_pods(api, {"app": "again"})
            return [p for p in pods if p["metadata"]["uid"] != first["metadata"]["uid"]]

        second = wait_for(replaced, timeout=90, interval=0.2, message="a replacement pod")[0]
        assert second["spec"]["nodeName"] == node
        assert written_id(cluster, second) == first["metadata"]["name"]  # the first pod's
        pv = volume_of(api, "again")
        assert v.volume_node_names(pv) == [node]
        assert v.annotations_of(pv).get(v.PROVISIONED_BY_ANNOTATION) == v.LOCAL_PATH_PROVISIONER

        # Deleting the claim while a pod uses it leaves it Terminating, the pod running.
        api.delete("PersistentVolumeClaim", "again", "default")
        held = api.get("PersistentVolumeClaim", "again", "default")
        assert held["metadata"].get("deletionTimestamp")
        assert v.PVC_PROTECTION in held["metadata"]["finalizers"]
        assert cluster.node(node).exec(second["metadata"]["name"], ["cat", "/data/id"])
        h.delete(api, "Deployment", "again")
        h.wait_gone(api, {"app": "again"})
        wait_for(lambda: gone(api, "PersistentVolumeClaim", "again"), timeout=30)
    finally:
        h.delete(api, "Deployment", "again")
        h.wait_gone(api, {"app": "again"})
        h.delete(api, "PersistentVolumeClaim", "again")


def test_statefulset_claims_per_ordinal_follow_their_pods(
    cluster: Cluster, api: GrpcApiClient
) -> None:
    labels = {"app": "db"}
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {
            "replicas": 3,
            "serviceName": "db",
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [
                        h.container(KEEPER, volumeMounts=[{"name": "data", "mountPath": "/data"}])
                    ],
                    "affinity": {
                        "podAntiAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                {"labelSelector": {"matchLabels": labels},
                                 "topologyKey": "kubernetes.io/hostname"}
                            ]
                        }
                    },
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "16Mi"}},
                    },
                }
            ],
        },
    }  # fmt: skip
    api.create("StatefulSet", sts, "default")
    try:
        pods = {p["metadata"]["name"]: p for p in h.wait_ready_pods(api, labels, 3)}
        assert written_id(cluster, pods["db-1"]) == "db-1"
        assert len({p["spec"]["nodeName"] for p in pods.values()}) == 3
        for i in range(3):
            pv = volume_of(api, f"data-db-{i}")
            assert v.volume_node_names(pv) == [pods[f"db-{i}"]["spec"]["nodeName"]]
        node1 = pods["db-1"]["spec"]["nodeName"]
        api.delete("Pod", "db-1", "default")

        def back() -> dict[str, Any]:
            p = api.get("Pod", "db-1", "default")
            fresh = p["metadata"]["uid"] != pods["db-1"]["metadata"]["uid"]
            return p if fresh and h.is_ready(p) else {}

        again = wait_for(back, timeout=90, interval=0.2, message="db-1 back")
        assert again["spec"]["nodeName"] == node1
        assert written_id(cluster, again) == "db-1"
        # Scaling down keeps the claims (whenScaled Retain).
        api.patch("StatefulSet", "db", {"spec": {"replicas": 1}}, "default")
        wait_for(lambda: len(h.pods(api, labels)) == 1, timeout=60, message="scaled to 1")
        assert not gone(api, "PersistentVolumeClaim", "data-db-2")
    finally:
        h.delete(api, "StatefulSet", "db")
        h.wait_gone(api, labels)
        for i in range(3):
            h.delete(api, "PersistentVolumeClaim", f"data-db-{i}")


def test_reclaim_delete_removes_data_and_retain_keeps_it(
    cluster: Cluster, api: GrpcApiClient
) -> None:
    api.create(
        "StorageClass",
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "local-retain"},
            "provisioner": v.LOCAL_PATH_PROVISIONER,
            "reclaimPolicy": "Retain",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        None,
    )
    api.create("PersistentVolumeClaim", claim("tmp"), "default")
    api.create("PersistentVolumeClaim", claim("kept", storageClassName="local-retain"), "default")
    api.create("Pod", claim_pod("use-tmp", "tmp"), "default")
    api.create("Pod", claim_pod("use-kept", "kept"), "default")
    for name in ("use-tmp", "use-kept"):
        assert written_id(cluster, h.wait_pod_running(api, name)) == name
    deleted, kept = volume_of(api, "tmp"), volume_of(api, "kept")
    deleted_dir, kept_dir = Path(v.volume_path(deleted)), Path(v.volume_path(kept))
    assert (deleted_dir / "id").read_text().strip() == "use-tmp"
    for name in ("use-tmp", "use-kept"):
        h.delete(api, "Pod", name)
    for name in ("tmp", "kept"):
        api.delete("PersistentVolumeClaim", name, "default")
    wait_for(lambda: gone(api, "PersistentVolume", deleted["metadata"]["name"], None),
             timeout=60, message="the Delete volume removed")  # fmt: skip
    assert not deleted_dir.exists()
    wait_for(
        lambda: api.get("PersistentVolume", kept["metadata"]["name"], None)["status"]["phase"]
        == "Released",
        timeout=60, message="the Retain volume Released",
    )  # fmt: skip
    assert (kept_dir / "id").read_text().strip() == "use-kept"
    api.delete("PersistentVolume", kept["metadata"]["name"], None)  # the admin's choice


def test_wait_for_first_consumer_follows_the_pod(cluster: Cluster, api: GrpcApiClient) -> None:
    api.create("PersistentVolumeClaim", claim("pinned"), "default")
    target = cluster.nodes[-1].name
    body = claim_pod("pinned", "pinned", nodeSelector={"kubernetes.io/hostname": target})
    api.create("Pod", body, "default")
    try:
        h.wait_pod_running(api, "pinned")
        pvc = api.get("PersistentVolumeClaim", "pinned", "default")
        assert pvc["metadata"]["annotations"][v.SELECTED_NODE_ANNOTATION] == target
        assert v.volume_node_names(volume_of(api, "pinned")) == [target]
    finally:
        h.delete(api, "Pod", "pinned")
        h.delete(api, "PersistentVolumeClaim", "pinned")


def test_read_write_once_conflict_is_explained(cluster: Cluster, api: GrpcApiClient) -> None:
    first, second = cluster.nodes[0].name, cluster.nodes[1].name
    api.create(
        "PersistentVolume",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "shared-disk"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "hostPath": {
                    "path": str(cluster.base / "shared-disk"),
                    "type": "DirectoryOrCreate",
                },
            },
        },
        None,
    )
    api.create("PersistentVolumeClaim", claim("shared", storageClassName=""), "default")
    try:
        api.create("Pod", claim_pod("holder", "shared", nodeName=first), "default")
        h.wait_pod_running(api, "holder")
        api.create(
            "Pod",
            claim_pod("wants", "shared", nodeSelector={"kubernetes.io/hostname": second}),
            "default",
        )

        def why() -> list[str]:
            lines = describe_scheduling(api.get("Pod", "wants", "default"))
            return lines if any("ReadWriteOnce" in line for line in lines) else []

        lines = wait_for(why, timeout=30, message="the RWO conflict in why-pending")
        text = "\n".join(lines)
        assert (
            f'persistentvolumeclaim "shared" in use by pod default/holder on node {first}' in text
        )
        assert "volumes: a ReadWriteOnce claim is in use on another node" in text
    finally:
        for name in ("wants", "holder"):
            h.delete(api, "Pod", name)
        h.delete(api, "PersistentVolumeClaim", "shared")
        wait_for(lambda: gone(api, "PersistentVolumeClaim", "shared"), timeout=60)
        api.delete("PersistentVolume", "shared-disk", None)
