"""Storage kinds at the API's edge: validation naming the field, defaults, matching (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api import volumes as v
from controlplane.api.defaults import apply_defaults
from controlplane.api.kinds import lookup
from controlplane.api.validation import validate

Obj = dict[str, Any]


def pv(**spec: Any) -> Obj:
    base: Obj = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "hostPath": {"path": "/srv/a"}}  # fmt: skip
    base.update(spec)
    return {"metadata": {"name": "pv1"}, "spec": base}


def pvc(**spec: Any) -> Obj:
    base: Obj = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    base.update(spec)
    return {"metadata": {"name": "c", "namespace": "default", "uid": "u1"}, "spec": base}


def test_kinds_are_served_with_kubernetes_names() -> None:
    assert lookup("pv").kind == "PersistentVolume" and not lookup("pv").namespaced
    assert lookup("pvc").kind == "PersistentVolumeClaim" and lookup("pvc").namespaced
    assert lookup("storageclasses.storage.k8s.io").api_version == "storage.k8s.io/v1"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"capacity": {"storage": "lots"}}, "spec.capacity.storage"),
        ({"capacity": {"storage": "0"}}, "spec.capacity.storage: must be greater than zero"),
        ({"capacity": {}}, "spec.capacity.storage: Required value"),
        ({"hostPath": {"path": "relative"}}, "spec.hostPath.path: 'relative' must be an absolute"),
        (
            {"hostPath": {"path": "/srv/../etc"}},
            "spec.hostPath.path: '/srv/../etc' must not contain",
        ),
        ({"accessModes": ["RWO"]}, 'spec.accessModes[0]: Unsupported value: "RWO"'),
        ({"accessModes": ["ReadWriteOncePod", "ReadWriteOnce"]}, "spec.accessModes: may not use"),
        ({"persistentVolumeReclaimPolicy": "Scrub"}, "spec.persistentVolumeReclaimPolicy"),
        ({"nfs": {"server": "x"}}, "spec: may specify only one volume source"),
        ({"hostPath": None, "local": {"path": "/x"}}, "spec.nodeAffinity: required for a local"),
        ({"mountOptions": ["ro"]}, "spec.mountOptions: may not specify mount options"),
    ],
)
def test_bad_volumes_name_the_field(spec: Obj, field: str) -> None:
    obj = pv(**spec)
    if obj["spec"].get("hostPath") is None:
        obj["spec"].pop("hostPath")
    problems = validate("PersistentVolume", obj)
    assert any(p.startswith(field) or field in p for p in problems), problems


def test_claim_rules_and_immutability() -> None:
    assert validate("PersistentVolumeClaim", pvc()) == []
    assert "spec.resources.requests.storage: Required value" in validate(
        "PersistentVolumeClaim", pvc(resources={"requests": {}})
    )
    assert (
        "spec.dataSource: not supported"
        in validate(
            "PersistentVolumeClaim", pvc(dataSource={"kind": "PersistentVolumeClaim", "name": "x"})
        )[0]
    )
    old = pvc(storageClassName="a", volumeName="pv1")
    shrink = pvc(storageClassName="a", volumeName="pv1", resources={"requests": {"storage": "1Mi"}})
    assert "spec.resources.requests.storage: field can not be less than previous value" in validate(
        "PersistentVolumeClaim", shrink, old
    )
    assert "spec.volumeName: field is immutable once the claim is bound" in validate(
        "PersistentVolumeClaim", pvc(storageClassName="a", volumeName="other"), old
    )


def test_statefulset_templates_may_be_mounted() -> None:
    sts: Obj = {
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [
                {"name": "c", "image": "x", "volumeMounts": [{"name": "data", "mountPath": "/d"}]}
            ]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": pvc()["spec"]}],
        },
    }  # fmt: skip
    apply_defaults("StatefulSet", sts)
    assert validate("StatefulSet", sts) == []
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain", "whenScaled": "Retain"
    }  # fmt: skip
    sts["spec"]["persistentVolumeClaimRetentionPolicy"]["whenScaled"] = "Maybe"
    assert any("whenScaled" in p for p in validate("StatefulSet", sts))


def test_defaults() -> None:
    obj = pv()
    apply_defaults("PersistentVolume", obj)
    assert obj["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert obj["status"]["phase"] == "Pending"
    sc: Obj = {"metadata": {"name": "x"}, "provisioner": "a.b/c"}
    apply_defaults("StorageClass", sc)
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Delete", "Immediate")
    assert validate("StorageClass", sc) == []
    changed = {**sc, "reclaimPolicy": "Retain"}
    assert "reclaimPolicy: field is immutable" in validate("StorageClass", changed, sc)


def test_smallest_fitting_volume_and_prebound_first() -> None:
    claim = pvc(storageClassName="")
    vols = [pv(capacity={"storage": s}) for s in ("5Gi", "2Gi", "512Mi")]
    for i, x in enumerate(vols):
        x["metadata"]["name"] = f"pv{i}"
    assert v.best_volume(vols, claim)["metadata"]["name"] == "pv1"  # type: ignore[index]
    vols[0]["spec"]["claimRef"] = v.claim_ref(claim)
    assert v.best_volume(vols, claim)["metadata"]["name"] == "pv0"  # type: ignore[index]
    assert v.volume_fits(vols[2], claim) == "capacity too small"
    ro = pv(accessModes=["ReadOnlyMany"])
    assert v.volume_fits(ro, claim) == "access modes RWO not offered"
    labelled = pvc(storageClassName="", selector={"matchLabels": {"disk": "ssd"}})
    assert v.volume_fits(vols[1], labelled) == "labels do not match the claim's selector"


def test_default_class_is_the_newest_marked_one() -> None:
    def cls(name: str, when: str, default: bool) -> Obj:
        ann = {v.DEFAULT_CLASS_ANNOTATION: "true"} if default else {}
        return {"metadata": {"name": name, "creationTimestamp": when, "annotations": ann}}

    classes = [cls("a", "2024-01-01T00:00:00Z", True), cls("b", "2025-01-01T00:00:00Z", True),
               cls("c", "2026-01-01T00:00:00Z", False)]  # fmt: skip
    assert v.default_class(classes)["metadata"]["name"] == "b"  # type: ignore[index]
    assert v.default_class(classes[2:]) is None


def test_node_may_write_only_metadata_of_its_own_local_path_volumes() -> None:
    mine = pv(nodeAffinity=v.node_affinity_for("n1"))
    mine["metadata"]["annotations"] = {v.PROVISIONED_BY_ANNOTATION: v.LOCAL_PATH_PROVISIONER}
    notes = {**mine["metadata"]["annotations"], "x": "y"}
    annotated = {**mine, "metadata": {**mine["metadata"], "annotations": notes}}
    assert v.local_path_node_writable(mine, annotated, "n1")
    # Its labels say which node may watch it: a node never changes them.
    relabelled = {**mine, "metadata": {**mine["metadata"], "labels": {"x": "y"}}}
    assert not v.local_path_node_writable(mine, relabelled, "n1")
    assert not v.local_path_node_writable(mine, annotated, "n2")
    grown = {**mine, "spec": {**mine["spec"], "capacity": {"storage": "9Gi"}}}
    assert not v.local_path_node_writable(mine, grown, "n1")
    assert not v.local_path_node_writable(
        pv(nodeAffinity=v.node_affinity_for("n1")), annotated, "n1"
    )


def test_get_columns_as_kubectl_prints_them() -> None:
    from controlplane.api.columns import headers_for, row_for

    vol = pv(claimRef={"namespace": "default", "name": "c"}, storageClassName="local-path")
    vol["spec"]["persistentVolumeReclaimPolicy"] = "Delete"
    vol["status"] = {"phase": "Bound"}
    assert headers_for("PersistentVolume", False)[:3] == ["NAME", "CAPACITY", "ACCESS MODES"]
    assert row_for("PersistentVolume", vol, 0, False)[:7] == [
        "pv1", "1Gi", "RWO", "Delete", "Bound", "default/c", "local-path"
    ]  # fmt: skip
    sc = {"metadata": {"name": "local-path", "annotations": {v.DEFAULT_CLASS_ANNOTATION: "true"}},
          "provisioner": v.LOCAL_PATH_PROVISIONER, "volumeBindingMode": "WaitForFirstConsumer"}  # fmt: skip
    assert row_for("StorageClass", sc, 0, False)[:3] == [
        "local-path (default)", "skiff.io/local-path", "Delete"
    ]  # fmt: skip
