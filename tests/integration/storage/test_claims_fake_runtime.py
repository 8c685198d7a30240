"""Storage on a real control plane (API server, scheduler, controllers) with an
agent over the in-memory CRI runtime: the whole claim path without containers.

A claim of the default class (local-path, WaitForFirstConsumer) waits for its
pod; the scheduler picks the node, the PV controller provisions a volume
pinned to it, the agent makes the directory and hands it to the container as
a mount. Reclaim Delete removes the data and the volume; Retain keeps them.
Bad input is refused or explained.
"""

from __future__ import annotations

import os
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
from controlplane.api import volumes as v
from controlplane.client import errors
from controlplane.client.apiclient import GrpcApiClient, connect, join
from tests.fakes.fake_runtime import FakeRuntime, serve_fake_runtime
from tests.harness.controlplane import ControlPlane
from tests.harness.mounts import unmount_all
from tests.harness.wait import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[GrpcApiClient, FakeRuntime, Path]]:
    tmp = tmp_path_factory.mktemp("storage")
    cp = ControlPlane(tmp / "cp", ["--store", "sqlite", "--no-leader-elect"], components=True)
    cp.start()
    sock_dir = Path(tempfile.mkdtemp(prefix="skstor", dir="/tmp"))
    try:
        with serve_fake_runtime(sock_dir / "cri.sock") as fake:
            token = (cp.data_dir / "join-token").read_text().strip()
            ca = (cp.data_dir / "pki" / "ca.crt").read_bytes()
            creds = join(f"127.0.0.1:{cp.port}", ca, token, "n1")
            api = connect(creds)
            runtime = CRIClient(f"unix://{sock_dir}/cri.sock", timeout=5)
            cfg = AgentConfig(
                node=NodeConfig(name="n1", address="127.0.0.1", fs_path=str(tmp)),
                root=tmp / "agent",
                pod_settings=NodeSettings(
                    log_root=str(tmp / "logs"), node_name="n1", host_ip="127.0.0.1"
                ),
                network=None,
                resync_period=1.0,
                relist_period=0.2,
                lease_period=1.0,
                local_path_root=tmp / "volumes",
            )
            agent = Agent(cfg, api, runtime, api_config=creds)
            agent.start()
            try:
                yield cp.client(), fake, tmp / "volumes"
            finally:
                agent.stop()
                runtime.close()
                api.close()
    finally:
        cp.close()
        shutil.rmtree(sock_dir, ignore_errors=True)
        unmount_all(tmp)  # subPath binds and tmpfs volumes of pods left running


def claim(name: str, size: str = "64Mi", **spec: Any) -> dict[str, Any]:
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


def pod(name: str, claim_name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "busybox:1.36",
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}],
            "terminationGracePeriodSeconds": 1,
            **spec,
        },
    }


def events_of(api: GrpcApiClient, name: str) -> list[str]:
    return [
        f"{e.get('reason')}: {e.get('message')}"
        for e in api.list("Event", "default").items
        if (e.get("involvedObject") or {}).get("name") == name
    ]


def running(api: GrpcApiClient, name: str) -> bool:
    return (api.get("Pod", name, "default").get("status") or {}).get("phase") == "Running"


def gone(api: GrpcApiClient, kind: str, name: str, ns: str | None = "default") -> bool:
    try:
        api.get(kind, name, ns)
        return False
    except errors.NotFound:
        return True


def test_wait_for_first_consumer_provisions_on_the_pods_node(cluster: Any) -> None:
    api, fake, root = cluster
    created = api.create("PersistentVolumeClaim", claim("data1"), "default")
    assert created["spec"]["storageClassName"] == "local-path"
    assert v.PVC_PROTECTION in created["metadata"]["finalizers"]
    wait_for(
        lambda: any("WaitForFirstConsumer" in e for e in events_of(api, "data1")),
        timeout=10, message="the claim waits for its first consumer",
    )  # fmt: skip
    assert api.get("PersistentVolumeClaim", "data1", "default")["status"]["phase"] == "Pending"
    api.create("Pod", pod("p1", "data1"), "default")
    wait_for(lambda: running(api, "p1"), timeout=30, message="pod p1 Running")
    pvc = api.get("PersistentVolumeClaim", "data1", "default")
    assert pvc["status"]["phase"] == "Bound"
    assert pvc["metadata"]["annotations"][v.SELECTED_NODE_ANNOTATION] == "n1"
    pv = api.get("PersistentVolume", pvc["spec"]["volumeName"], None)
    assert v.volume_node_names(pv) == ["n1"]
    assert pv["status"]["phase"] == "Bound"
    path = root / pv["metadata"]["name"]
    assert pv["spec"]["local"]["path"] == str(path) and path.is_dir()
    wait_for(
        lambda: v.annotations_of(api.get("PersistentVolume", pv["metadata"]["name"], None)).get(
            v.LOCAL_PATH_QUOTA_ANNOTATION
        ),
        timeout=10, message="the agent says how the size is enforced",
    )  # fmt: skip
    [container] = [
        c
        for c in fake.container_by_name("c")
        if c.config.labels.get("io.kubernetes.pod.name") == "p1"
    ][:1]
    mounts = {m.container_path: m.host_path for m in container.config.mounts}
    assert mounts["/data"] == str(path)

    # A claim in use stays Terminating; the pod going lets it go, and reclaim
    # Delete removes the volume and its data.
    (path / "f").write_text("x")
    api.delete("PersistentVolumeClaim", "data1", "default")
    wait_for(lambda: running(api, "p1"), timeout=5)
    held = api.get("PersistentVolumeClaim", "data1", "default")
    assert (
        held["metadata"].get("deletionTimestamp")
        and v.PVC_PROTECTION in held["metadata"]["finalizers"]
    )
    api.delete("Pod", "p1", "default")
    wait_for(lambda: gone(api, "PersistentVolumeClaim", "data1"), timeout=30, message="claim gone")
    wait_for(lambda: gone(api, "PersistentVolume", pv["metadata"]["name"], None), timeout=30,
             message="volume deleted")  # fmt: skip
    assert not path.exists()


def test_retain_keeps_volume_and_data(cluster: Any) -> None:
    api, _, root = cluster
    api.create(
        "StorageClass",
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "keep"},
            "provisioner": v.LOCAL_PATH_PROVISIONER,
            "reclaimPolicy": "Retain",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        None,
    )
    api.create("PersistentVolumeClaim", claim("kept", storageClassName="keep"), "default")
    api.create("Pod", pod("p2", "kept"), "default")
    wait_for(lambda: running(api, "p2"), timeout=30, message="pod p2 Running")
    name = api.get("PersistentVolumeClaim", "kept", "default")["spec"]["volumeName"]
    (root / name / "f").write_text("kept")
    api.delete("Pod", "p2", "default")
    api.delete("PersistentVolumeClaim", "kept", "default")
    wait_for(lambda: gone(api, "PersistentVolumeClaim", "kept"), timeout=30)
    wait_for(
        lambda: api.get("PersistentVolume", name, None)["status"]["phase"] == "Released",
        timeout=15, message="volume Released",
    )  # fmt: skip
    assert (root / name / "f").read_text() == "kept"


def test_claims_nothing_serves_and_missing_claims(cluster: Any) -> None:
    api, _, _ = cluster
    api.create("PersistentVolumeClaim", claim("static", storageClassName=""), "default")
    wait_for(
        lambda: any("no persistent volumes available" in e for e in events_of(api, "static")),
        timeout=10, message="the claim's event says why it waits",
    )  # fmt: skip
    api.create("Pod", pod("orphan", "nope"), "default")

    def failed() -> bool:
        return any(
            e.startswith("FailedScheduling: 0/1 nodes are available")
            and 'persistentvolumeclaim "nope" not found' in e
            for e in events_of(api, "orphan")
        )

    wait_for(failed, timeout=10, message="FailedScheduling naming the missing claim")
    # An access mode the default class cannot serve: the scheduler says so.
    api.create(
        "PersistentVolumeClaim", claim("shared-rwx", accessModes=["ReadWriteMany"]), "default"
    )
    api.create("Pod", pod("rwx", "shared-rwx"), "default")
    wait_for(
        lambda: any(
            "serves only ReadWriteOnce and ReadWriteOncePod, not RWX" in e
            for e in events_of(api, "rwx")
        ),
        timeout=10, message="FailedScheduling naming the access mode",
    )  # fmt: skip
    api.delete("Pod", "rwx", "default")
    api.delete("Pod", "orphan", "default")
    api.delete("PersistentVolumeClaim", "static", "default")


def test_bad_volumes_are_refused_naming_the_field(cluster: Any) -> None:
    api, _, _ = cluster
    bad = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "bad"},
        "spec": {
            "capacity": {"storage": "lots"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/srv/../etc"},
        },
    }
    with pytest.raises(errors.Invalid) as err:
        api.create("PersistentVolume", bad, None)
    assert "spec.capacity.storage" in str(err.value) and "spec.hostPath.path" in str(err.value)


def test_expansion_where_the_class_allows(cluster: Any) -> None:
    api, _, _ = cluster
    api.create("PersistentVolumeClaim", claim("grow", "64Mi"), "default")
    api.create("Pod", pod("p3", "grow"), "default")
    wait_for(lambda: running(api, "p3"), timeout=30, message="pod p3 Running")
    api.patch(
        "PersistentVolumeClaim", "grow",
        {"spec": {"resources": {"requests": {"storage": "128Mi"}}}}, "default",
    )  # fmt: skip

    def grown() -> bool:
        pvc = api.get("PersistentVolumeClaim", "grow", "default")
        pv = api.get("PersistentVolume", pvc["spec"]["volumeName"], None)
        return bool(
            pv["spec"]["capacity"]["storage"] == "128Mi"
            and pvc["status"].get("capacity", {}).get("storage") == "128Mi"
        )

    wait_for(grown, timeout=15, message="volume and claim at 128Mi")
    api.create(
        "StorageClass",
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": {"name": "fixed"}, "provisioner": v.LOCAL_PATH_PROVISIONER,
         "volumeBindingMode": "WaitForFirstConsumer"},
        None,
    )  # fmt: skip
    api.create("PersistentVolumeClaim", claim("fixed", storageClassName="fixed"), "default")
    with pytest.raises(errors.Forbidden) as err:
        api.patch(
            "PersistentVolumeClaim", "fixed",
            {"spec": {"resources": {"requests": {"storage": "1Gi"}}}}, "default",
        )  # fmt: skip
    assert "storageclass that provisions the pvc must support resize" in str(err.value)


def test_sub_path_read_only_fs_group_and_waiting_for_a_claim(cluster: Any) -> None:
    api, fake, root = cluster
    api.create("PersistentVolumeClaim", claim("shared-ro"), "default")
    body = pod("p4", "shared-ro", securityContext={"fsGroup": 2345})
    body["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "data", "mountPath": "/data", "subPath": "sub"},
        {"name": "data", "mountPath": "/whole", "readOnly": True},
    ]
    api.create("Pod", body, "default")
    wait_for(lambda: running(api, "p4"), timeout=30, message="pod p4 Running")
    path = root / api.get("PersistentVolumeClaim", "shared-ro", "default")["spec"]["volumeName"]
    [container] = [
        c
        for c in fake.container_by_name("c")
        if c.config.labels.get("io.kubernetes.pod.name") == "p4"
    ][:1]
    mounts = {m.container_path: m for m in container.config.mounts}
    # subPath reaches the runtime as the agent's own bind of the volume's "sub"
    # (agent/subpath.py), never as a path inside the volume a container could swap.
    data = mounts["/data"]
    assert "/volume-subpaths/data/" in data.host_path and not data.readonly
    assert os.path.samestat(os.stat(data.host_path), (path / "sub").stat())
    assert mounts["/whole"].host_path == str(path) and mounts["/whole"].readonly
    assert path.stat().st_gid == 2345 and path.stat().st_mode & 0o2000
    assert 2345 in container.config.linux.security_context.supplemental_groups

    # A pod put on the node by hand with a claim that is not bound waits, saying why.
    api.create("PersistentVolumeClaim", claim("never", storageClassName="none"), "default")
    api.create("Pod", pod("p5", "never", nodeName="n1"), "default")
    wait_for(
        lambda: any(
            e.startswith('FailedMount: waiting for persistentvolumeclaim "never" to be bound')
            for e in events_of(api, "p5")
        ),
        timeout=15, message="the agent's event for an unbound claim",
    )  # fmt: skip
    assert not running(api, "p5")
    for name in ("p4", "p5"):
        api.delete("Pod", name, "default")
