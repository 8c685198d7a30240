"""skiffctl get and describe for claims and volumes (fake API)."""

from __future__ import annotations

from tests.fakes.skiffctl import Ctl


def test_get_and_describe_claims_and_volumes(ctl: Ctl) -> None:
    ctl.client.create(
        "PersistentVolume",
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                  "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "manual",
                  "local": {"path": "/srv/pv1"},
                  "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                      {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}},
                  "claimRef": {"namespace": "default", "name": "data"}},
         "status": {"phase": "Bound"}},
    )  # fmt: skip
    ctl.client.create(
        "PersistentVolumeClaim",
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": "data", "namespace": "default"},
         "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
                  "volumeName": "pv1", "resources": {"requests": {"storage": "1Gi"}}},
         "status": {"phase": "Bound", "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"]}},
    )  # fmt: skip
    ctl.client.create(
        "Pod",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "user", "namespace": "default"},
         "spec": {"containers": [{"name": "c", "image": "x"}],
                  "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}},
    )  # fmt: skip
    r = ctl("get", "pvc")
    assert r.code == 0 and "pv1" in r.out and "RWO" in r.out and "Bound" in r.out
    r = ctl("get", "pv")
    assert "default/data" in r.out and "Retain" in r.out
    r = ctl("describe", "pvc", "data")
    assert r.code == 0
    assert "Used By:" in r.out and "user" in r.out.split("Used By:")[1].splitlines()[0]
    r = ctl("describe", "pv", "pv1")
    assert "kubernetes.io/hostname in [n1]" in r.out and "/srv/pv1" in r.out
