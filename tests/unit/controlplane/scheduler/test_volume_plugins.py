"""The volume plugins in a scheduler over an in-memory cluster: claims decide where pods go.

The InMemoryVolumeWriter plays the PV controller and the local-path
provisioner, so a WaitForFirstConsumer claim is bound in PreBind and the
pod bound after it.
"""

from __future__ import annotations

from typing import Any

from controlplane.api import volumes as v
from controlplane.scheduler.volume_state import InMemoryVolumeWriter
from tests.unit.controlplane.scheduler.harness import Env

Obj = dict[str, Any]


def node(name: str, local_path: bool = True, labels: dict[str, str] | None = None) -> Obj:
    ann = {v.LOCAL_PATH_ROOT_ANNOTATION: "/var/lib/skiff/local-path"} if local_path else {}
    mark = {v.LOCAL_PATH_LABEL: "true"} if local_path else {}
    return {
        "metadata": {"name": name,
                     "labels": {"kubernetes.io/hostname": name, **mark, **(labels or {})},
                     "annotations": ann},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }  # fmt: skip


def pod(name: str, *claims: str, **spec: Any) -> Obj:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "containers": [{"name": "c", "image": "x"}],
            "volumes": [
                {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                for i, c in enumerate(claims)
            ],
            **spec,
        },
    }


def claim(name: str, cls: str = "local-path", modes: tuple[str, ...] = ("ReadWriteOnce",),
          volume: str = "") -> Obj:  # fmt: skip
    out: Obj = {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"accessModes": list(modes), "storageClassName": cls,
                 "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Pending"},
    }  # fmt: skip
    if volume:
        out["spec"]["volumeName"] = volume
        out["status"] = {"phase": "Bound", "accessModes": list(modes)}
    return out


def volume(name: str, size: str = "1Gi", node_name: str = "", cls: str = "manual",
           claim_of: Obj | None = None, labels: dict[str, str] | None = None) -> Obj:  # fmt: skip
    spec: Obj = {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                 "storageClassName": cls, "hostPath": {"path": f"/srv/{name}"}}  # fmt: skip
    if node_name:
        spec["nodeAffinity"] = v.node_affinity_for(node_name)
    if claim_of is not None:
        spec["claimRef"] = v.claim_ref(claim_of)
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec,
            "status": {"phase": "Bound" if claim_of else "Available"}}  # fmt: skip


def sc(
    name: str, mode: str = "WaitForFirstConsumer", provisioner: str = v.LOCAL_PATH_PROVISIONER
) -> Obj:
    return {"metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": mode}


def env(*nodes: Obj) -> tuple[Env, InMemoryVolumeWriter]:
    e = Env(nodes=nodes)
    writer = InMemoryVolumeWriter(e.sched.volumes)
    e.sched.volumes.writer = writer
    for c in (sc("local-path"), sc("manual", provisioner="kubernetes.io/no-provisioner"),
              sc("fast", mode="Immediate")):  # fmt: skip
        e.sched.on_storage("StorageClass", "ADDED", c)
    return e, writer


def test_missing_claim_is_named() -> None:
    e, _ = env(node("n1"), node("n2"))
    e.add(pod("p", "nope"))
    assert e.node_of("p") is None
    assert 'persistentvolumeclaim "nope" not found' in e.message("p")
    # The claim appearing brings the pod back.
    e.sched.on_storage("PersistentVolumeClaim", "ADDED", claim("nope"))
    e.step(2)
    assert e.node_of("p") in ("n1", "n2")


def test_wait_for_first_consumer_provisions_on_the_chosen_node() -> None:
    e, writer = env(node("n1", local_path=False), node("n2"))
    e.sched.on_storage("PersistentVolumeClaim", "ADDED", claim("data"))
    e.add(pod("p", "data"))
    assert e.node_of("p") == "n2"  # n1's agent runs no local-path provisioner
    assert writer.calls == [("provision", "default/data", "n2")]


def test_smallest_fitting_static_volume_on_a_reachable_node() -> None:
    e, writer = env(node("n1"), node("n2"))
    for pv in (volume("big", "10Gi", "n1"), volume("small", "2Gi", "n2"),
               volume("tiny", "100Mi", "n1")):  # fmt: skip
        e.sched.on_storage("PersistentVolume", "ADDED", pv)
    e.sched.on_storage("PersistentVolumeClaim", "ADDED", claim("data", cls="manual"))
    e.add(pod("p", "data"))
    assert writer.calls == [("bind", "default/data", "small")]
    assert e.node_of("p") == "n2"


def test_bound_volume_pins_the_pod_and_immediate_claims_wait() -> None:
    e, _ = env(node("n1"), node("n2"))
    c = claim("data", cls="manual", volume="pv1")
    e.sched.on_storage("PersistentVolume", "ADDED", volume("pv1", node_name="n1", claim_of=c))
    e.sched.on_storage("PersistentVolumeClaim", "ADDED", c)
    e.add(pod("p", "data", nodeSelector={"kubernetes.io/hostname": "n2"}))
    assert e.node_of("p") is None
    assert "volume node affinity conflict" in e.message("p")
    e.add(pod("q", "data"))
    assert e.node_of("q") == "n1"
    e.sched.on_storage("PersistentVolumeClaim", "ADDED", claim("later", cls="fast"))
    e.add(pod("r", "later"))
    assert "pod has unbound immediate PersistentVolumeClaims" in e.message("r")


def test_no_static_volume_fits() -> None:
    e, _ = env(node("n1"))
    e.sched.on_storage("PersistentVolume", "ADDED", volume("small", "100Mi", "n1"))
    e.sched.on_storage("PersistentVolumeClaim", "ADDED", claim("data", cls="manual"))
    e.add(pod("p", "data"))
    assert "didn't find available persistent volumes to bind" in e.message("p")


def test_read_write_once_in_use_elsewhere_and_read_write_once_pod() -> None:
    e, _ = env(node("n1"), node("n2"))
    c = claim("shared", cls="manual", volume="pv1")
    e.sched.on_storage("PersistentVolume", "ADDED", volume("pv1", claim_of=c))
    e.sched.on_storage("PersistentVolumeClaim", "ADDED", c)
    e.add(pod("a", "shared", nodeName="n1"))
    e.add(pod("b", "shared", nodeSelector={"kubernetes.io/hostname": "n2"}))
    assert e.node_of("b") is None
    assert (
        'ReadWriteOnce persistentvolumeclaim "shared" in use by pod default/a on node n1'
        in e.message("b")
    )
    e.add(pod("c", "shared"))
    assert e.node_of("c") == "n1"  # the same node may share it
    only = claim("solo", cls="manual", modes=("ReadWriteOncePod",), volume="pv2")
    e.sched.on_storage("PersistentVolume", "ADDED", volume("pv2", claim_of=only))
    e.sched.on_storage("PersistentVolumeClaim", "ADDED", only)
    e.add(pod("d", "solo"))
    e.add(pod("f", "solo"))
    assert e.node_of("d") and e.node_of("f") is None
    assert "ReadWriteOncePod" in e.message("f")


def test_volume_limits_and_zones() -> None:
    limited = node("n1")
    limited["status"]["allocatable"]["attachable-volumes-local"] = "1"
    e, _ = env(limited, node("n2", labels={"topology.kubernetes.io/zone": "b"}))
    for name in ("c1", "c2"):
        c = claim(name, cls="manual", volume=f"pv-{name}")
        e.sched.on_storage("PersistentVolume", "ADDED", volume(f"pv-{name}", claim_of=c))
        e.sched.on_storage("PersistentVolumeClaim", "ADDED", c)
    e.add(pod("one", "c1", nodeName="n1"))
    e.add(pod("two", "c2", nodeSelector={"kubernetes.io/hostname": "n1"}))
    assert "node(s) exceed max volume count" in e.message("two")
    zc = claim("z", cls="manual", volume="pv-z")
    e.sched.on_storage("PersistentVolume", "ADDED", volume(
        "pv-z", claim_of=zc, labels={"topology.kubernetes.io/zone": "a"}))  # fmt: skip
    e.sched.on_storage("PersistentVolumeClaim", "ADDED", zc)
    e.add(pod("zoned", "z"))
    assert "node(s) had no available volume zone" in e.message("zoned")


def test_pods_without_claims_still_bind_in_batches() -> None:
    e, _ = env(node("n1"))
    assert e.sched._batchable == set(e.sched.profiles)


def test_bound_and_new_claims_together() -> None:
    e, writer = env(node("n1"), node("n2"), node("n3", local_path=False))
    old = claim("old", cls="manual", volume="pv-old")
    e.sched.on_storage("PersistentVolume", "ADDED", volume("pv-old", node_name="n2", claim_of=old))
    e.sched.on_storage("PersistentVolumeClaim", "ADDED", old)
    e.sched.on_storage("PersistentVolumeClaim", "ADDED", claim("new"))
    e.add(pod("p", "old", "new"))
    assert e.node_of("p") == "n2"
    assert writer.calls == [("provision", "default/new", "n2")]
    stuck = claim("stuck", cls="manual", volume="pv-stuck")
    e.sched.on_storage(
        "PersistentVolume", "ADDED", volume("pv-stuck", node_name="n3", claim_of=stuck)
    )
    e.sched.on_storage("PersistentVolumeClaim", "ADDED", stuck)
    e.sched.on_storage("PersistentVolumeClaim", "ADDED", claim("more"))
    e.add(pod("q", "stuck", "more"))
    message = e.message("q")
    assert "2 node(s) had volume node affinity conflict" in message
    assert "1 node(s) did not run the skiff.io/local-path provisioner" in message


def test_pods_without_claims_to_bind_keep_batched_binds() -> None:
    """VolumeBinding's PreBind in the default profile does not push every pod off
    the batched binder: only a pod with a claim to bind takes the per-pod cycle."""
    from controlplane.scheduler import config
    from controlplane.scheduler.scheduler import from_config
    from machinery.clock import FakeClock
    from tests.fakes.scheduler_cluster import InMemoryCluster
    from tests.harness.wait import wait_for

    batched: list[str] = []

    class Recording(InMemoryCluster):
        def bind_many(self, items: Any) -> Any:
            batched.extend(f"default/{p['metadata']['name']}" for p, _, _ in items)
            return super().bind_many(items)

    cluster = Recording(FakeClock())
    sched = from_config(config.parse(None), cluster, clock=cluster.clock, bind_batch_threads=1)
    try:
        sched.volumes.writer = InMemoryVolumeWriter(sched.volumes)
        sched.on_storage("StorageClass", "ADDED", sc("local-path"))
        sched.on_storage("PersistentVolumeClaim", "ADDED", claim("data"))
        n = node("n1")
        cluster.add_node(n)
        sched.on_node_add(n)
        for p in (pod("plain"), pod("claimed", "data")):
            cluster.add_pod(p)
            sched.on_pod_add(p)
        assert sched.schedule_pending() == 2
        wait_for(lambda: sched.stats["scheduled"] == 2, timeout=10)
        assert batched == ["default/plain"]
        assert cluster.pods["default/claimed"]["spec"]["nodeName"] == "n1"
    finally:
        sched.shutdown_binds()
