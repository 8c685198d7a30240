"""The PV controller's decisions and a StatefulSet's claims, as tables (pure)."""

from __future__ import annotations

from typing import Any

from controlplane.api import volumes as v
from controlplane.controllers import pv_plan, set_claims

Obj = dict[str, Any]

WFFC = {"metadata": {"name": "local-path"}, "provisioner": v.LOCAL_PATH_PROVISIONER,
        "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Delete"}  # fmt: skip
MANUAL = {"metadata": {"name": "manual"}, "provisioner": "kubernetes.io/no-provisioner"}
CLASSES = {"local-path": WFFC, "manual": MANUAL}


def claim(cls: str = "local-path", **meta: Any) -> Obj:
    return {
        "metadata": {"name": "c", "namespace": "default", "uid": "u1", **meta},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                 "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Pending"},
    }  # fmt: skip


def volume(name: str = "pv1", **spec: Any) -> Obj:
    return {
        "metadata": {"name": name},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "storageClassName": "manual", "hostPath": {"path": "/x"},
                 "persistentVolumeReclaimPolicy": "Retain", **spec},
        "status": {"phase": "Available"},
    }  # fmt: skip


def test_wait_for_first_consumer_waits_then_provisions_on_the_selected_node() -> None:
    plan = pv_plan.plan_claim(claim(), [], CLASSES, {"n1": "/r"})
    assert plan.event and plan.event[1] == "WaitForFirstConsumer" and plan.phase == "Pending"
    selected = claim(annotations={v.SELECTED_NODE_ANNOTATION: "n1"})
    assert pv_plan.plan_claim(selected, [], CLASSES, {"n1": "/r"}).provision_on == "n1"
    elsewhere = claim(annotations={v.SELECTED_NODE_ANNOTATION: "n2"})
    plan = pv_plan.plan_claim(elsewhere, [], CLASSES, {"n1": "/r"})
    assert plan.event and "does not run the skiff.io/local-path provisioner" in plan.event[2]
    pv = pv_plan.provisioned_volume(selected, WFFC, "n1", "/r")
    assert pv["spec"]["local"]["path"] == "/r/pvc-u1"
    assert v.volume_node_names(pv) == ["n1"] and v.claim_ref_matches(pv, selected)
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Delete"


def test_static_binding_and_why_nothing_fits() -> None:
    c = claim("manual")
    plan = pv_plan.plan_claim(
        c, [volume(), volume("pv2", capacity={"storage": "5Gi"})], CLASSES, {}
    )
    assert plan.bind_volume is not None and plan.bind_volume["metadata"]["name"] == "pv1"
    plan = pv_plan.plan_claim(c, [volume(accessModes=["ReadOnlyMany"])], CLASSES, {})
    assert plan.event is not None and plan.event[1] == "FailedBinding"
    assert "1 access modes RWO not offered" in plan.event[2]


def test_prebound_claims_and_lost_volumes() -> None:
    c = claim("manual")
    c["spec"]["volumeName"] = "pv1"
    assert pv_plan.plan_claim(c, [volume()], CLASSES, {}).bind_volume is not None
    taken = volume(claimRef={"name": "other", "namespace": "default", "uid": "u9"})
    plan = pv_plan.plan_claim(c, [taken], CLASSES, {})
    assert plan.event and "already bound to a different claim" in plan.event[2]
    c["status"]["phase"] = "Bound"
    assert pv_plan.plan_claim(c, [], CLASSES, {}).phase == "Lost"


def test_volume_phases_and_reclaim() -> None:
    c = claim("manual")
    fresh = volume()
    fresh["status"]["phase"] = "Pending"
    assert pv_plan.plan_volume(fresh, None).phase == "Available"
    assert pv_plan.plan_volume(volume(), None) == pv_plan.VolumePlan()
    bound = volume(claimRef=v.claim_ref(c))
    assert pv_plan.plan_volume(bound, c).phase == "Bound"
    bound["status"]["phase"] = "Bound"
    assert pv_plan.plan_volume(bound, None).phase == "Released"
    bound["status"]["phase"] = "Released"
    assert pv_plan.plan_volume(bound, None) == pv_plan.VolumePlan()  # Retain keeps it
    bound["spec"]["persistentVolumeReclaimPolicy"] = "Delete"
    failed = pv_plan.plan_volume(bound, None)
    assert failed.phase == "Failed" and "local-path" in failed.message
    bound["metadata"]["annotations"] = {v.PROVISIONED_BY_ANNOTATION: v.LOCAL_PATH_PROVISIONER}
    assert pv_plan.plan_volume(bound, None).delete


def test_expansion_follows_the_request_when_the_class_allows() -> None:
    c = claim(cls="grow")
    c["spec"]["volumeName"] = "pv1"
    c["spec"]["resources"]["requests"]["storage"] = "2Gi"
    c["status"]["phase"] = "Bound"
    pv = volume(claimRef=v.claim_ref(c), storageClassName="grow")
    pv["metadata"]["annotations"] = {v.PROVISIONED_BY_ANNOTATION: v.LOCAL_PATH_PROVISIONER}
    classes = {"grow": {**WFFC, "allowVolumeExpansion": True}}
    assert pv_plan.plan_claim(c, [pv], classes, {}).expand_to == "2Gi"
    plan = pv_plan.plan_claim(c, [pv], {"grow": WFFC}, {})
    assert plan.event and plan.event[1] == "VolumeResizeFailed"


def test_claim_in_use_ignores_finished_pods() -> None:
    def pod(name: str, phase: str) -> Obj:
        return {"metadata": {"name": name, "namespace": "default"}, "status": {"phase": phase},
                "spec": {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}]}}  # fmt: skip

    assert pv_plan.claim_in_use("default/c", [pod("a", "Running"), pod("b", "Succeeded")]) == ["a"]


def test_statefulset_claims_per_ordinal_and_retention() -> None:
    sts: Obj = {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default", "uid": "s1"},
        "spec": {"selector": {"matchLabels": {"app": "db"}},
                 "volumeClaimTemplates": [{"metadata": {"name": "data", "labels": {"t": "1"}},
                                           "spec": {"accessModes": ["ReadWriteOnce"]}}],
                 "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain",
                                                          "whenScaled": "Retain"}},
    }  # fmt: skip
    [made] = set_claims.claims_for(sts, 2)
    assert made["metadata"]["name"] == "data-db-2"
    assert made["metadata"]["labels"] == {"t": "1", "app": "db"}
    assert "ownerReferences" not in made["metadata"]
    pod: Obj = {"spec": {"volumes": [{"name": "data", "emptyDir": {}}]}}
    set_claims.add_claim_volumes(pod, sts, 2)
    assert pod["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-2"}}
    ]
    claims = [{"metadata": {"name": f"data-db-{i}"}} for i in range(3)]
    assert set_claims.condemned_claims(sts, claims, {0: {}}, 1) == []
    sts["spec"]["persistentVolumeClaimRetentionPolicy"] = {"whenDeleted": "Delete",
                                                           "whenScaled": "Delete"}  # fmt: skip
    assert [
        c["metadata"]["name"] for c in set_claims.condemned_claims(sts, claims, {0: {}, 2: {}}, 1)
    ] == ["data-db-1"]
    assert set_claims.claims_for(sts, 0)[0]["metadata"]["ownerReferences"][0]["uid"] == "s1"


def test_local_path_volumes_carry_their_node_label() -> None:
    """Their node's agent lists and watches volumes by this label, the only
    volumes a node may list (issue 32); volumes made before it get it."""
    pv = pv_plan.provisioned_volume(claim(), WFFC, "n1", "/r")
    assert pv["metadata"]["labels"] == {v.LOCAL_PATH_NODE_LABEL: "n1"}
    assert pv_plan.missing_node_label(pv) is None
    del pv["metadata"]["labels"]
    assert pv_plan.missing_node_label(pv) == "n1"
    pv["metadata"]["labels"] = {v.LOCAL_PATH_NODE_LABEL: "n2"}  # set by hand, wrongly
    assert pv_plan.missing_node_label(pv) == "n1"
    assert pv_plan.missing_node_label(volume()) is None
