"""The storage controllers and StatefulSet claims on the in-memory API."""

from __future__ import annotations

from typing import Any

from controlplane.api import volumes as v
from controlplane.client import errors

Obj = dict[str, Any]


def sts(replicas: int = 2, **policy: str) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "c", "image": "db:1"}]},
            },
            "volumeClaimTemplates": [
                {"metadata": {"name": "data"},
                 "spec": {"accessModes": ["ReadWriteOnce"],
                          "resources": {"requests": {"storage": "1Gi"}}}}
            ],
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain",
                                                     "whenScaled": "Retain", **policy},
        },
    }  # fmt: skip


def names(e: Any, kind: str) -> list[str]:
    return sorted(
        o["metadata"]["name"]
        for o in e.client.objects(kind, "default")
        if not o["metadata"].get("deletionTimestamp")
    )


def test_statefulset_claims_before_pods_and_kept_on_scale_down(env: Any) -> None:
    e = env("statefulset")
    e.client.create("StatefulSet", sts())
    e.wait(lambda: names(e, "Pod") == ["db-0", "db-1"])
    assert names(e, "PersistentVolumeClaim") == ["data-db-0", "data-db-1"]
    pod = e.client.get("Pod", "db-1")
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-1"}} in pod["spec"][
        "volumes"
    ]
    claim = e.client.get("PersistentVolumeClaim", "data-db-0")
    assert claim["metadata"]["labels"] == {"app": "db"}
    assert "ownerReferences" not in claim["metadata"]
    e.client.patch("StatefulSet", "db", {"spec": {"replicas": 0}})
    e.wait(lambda: names(e, "Pod") == [])
    e.wait(e.idle)
    assert names(e, "PersistentVolumeClaim") == ["data-db-0", "data-db-1"]


def test_when_scaled_delete_removes_the_claims_of_gone_ordinals(env: Any) -> None:
    e = env("statefulset")
    e.client.create("StatefulSet", sts(whenScaled="Delete", whenDeleted="Delete"))
    e.wait(lambda: names(e, "Pod") == ["db-0", "db-1"])
    owner = e.client.get("PersistentVolumeClaim", "data-db-0")["metadata"]["ownerReferences"]
    assert owner[0]["kind"] == "StatefulSet" and not owner[0]["controller"]
    e.client.patch("StatefulSet", "db", {"spec": {"replicas": 1}})
    for p in e.client.objects("Pod", "default"):
        if p["metadata"].get("deletionTimestamp"):
            e.client.finish_delete("Pod", p["metadata"]["name"], "default")
    e.settle(lambda: names(e, "PersistentVolumeClaim") == ["data-db-0"])


def static_volume(name: str = "pv1", size: str = "1Gi") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "finalizers": [v.PV_PROTECTION]},
        "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": "/srv"}},
        "status": {"phase": "Pending"},
    }  # fmt: skip


def static_claim(name: str = "c") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default", "finalizers": [v.PVC_PROTECTION]},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                 "resources": {"requests": {"storage": "512Mi"}}},
        "status": {"phase": "Pending"},
    }  # fmt: skip


def test_binding_protection_and_release(env: Any) -> None:
    e = env("persistentvolume-binder,pvc-protection,pv-protection")
    e.client.create("PersistentVolume", static_volume("big", "5Gi"), None)
    e.client.create("PersistentVolume", static_volume("small", "1Gi"), None)
    e.client.create("PersistentVolumeClaim", static_claim())

    def bound() -> bool:
        c = e.client.get("PersistentVolumeClaim", "c")
        return (c.get("status") or {}).get("phase") == "Bound"

    e.settle(bound)
    c = e.client.get("PersistentVolumeClaim", "c")
    assert c["spec"]["volumeName"] == "small"  # the smallest that fits
    assert c["status"]["capacity"] == {"storage": "1Gi"}
    pv = e.client.get("PersistentVolume", "small", None)
    assert pv["spec"]["claimRef"]["uid"] == c["metadata"]["uid"]
    e.settle(lambda: e.client.get("PersistentVolume", "small", None)["status"]["phase"] == "Bound")
    e.client.create(
        "Pod",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "user", "namespace": "default"},
         "spec": {"containers": [{"name": "c", "image": "x"}],
                  "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}]},
         "status": {"phase": "Running"}},
    )  # fmt: skip
    e.client.delete("PersistentVolumeClaim", "c", "default")
    e.wait(e.idle)
    e.tick(1.0)
    e.wait(e.idle)
    assert e.client.get("PersistentVolumeClaim", "c")["metadata"]["finalizers"] == [
        v.PVC_PROTECTION
    ]
    # A bound volume being deleted waits for its claim too.
    e.client.delete("PersistentVolume", "small", None)
    e.client.delete("Pod", "user", "default")
    e.client.finish_delete("Pod", "user", "default")

    def claim_gone() -> bool:
        try:
            e.client.get("PersistentVolumeClaim", "c")
            return False
        except errors.NotFound:
            return True

    e.settle(claim_gone)

    def volume_gone() -> bool:
        try:
            e.client.get("PersistentVolume", "small", None)
            return False
        except errors.NotFound:
            return True

    e.settle(volume_gone)
    assert e.client.get("PersistentVolume", "big", None)["status"]["phase"] == "Available"


def test_when_deleted_delete_claims_go_with_the_set(env: Any) -> None:
    e = env("statefulset,garbagecollector")
    e.client.create("StatefulSet", sts(replicas=1, whenDeleted="Delete"))
    e.wait(lambda: names(e, "PersistentVolumeClaim") == ["data-db-0"])
    e.client.delete("StatefulSet", "db", "default")
    e.settle(lambda: names(e, "PersistentVolumeClaim") == [], timeout=20)


def test_claim_deleted_under_a_pending_pod_comes_back(env: Any) -> None:
    e = env("statefulset")
    e.client.create("StatefulSet", sts(replicas=1))
    e.wait(lambda: names(e, "Pod") == ["db-0"])
    first = e.client.get("PersistentVolumeClaim", "data-db-0")["metadata"]["uid"]
    e.client.delete("PersistentVolumeClaim", "data-db-0", "default")
    e.settle(
        lambda: (
            names(e, "PersistentVolumeClaim") == ["data-db-0"]
            and e.client.get("PersistentVolumeClaim", "data-db-0")["metadata"]["uid"] != first
        )
    )
