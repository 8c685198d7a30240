"""What the PersistentVolume controller should do with one claim or one volume (pure).

`plan_claim(claim, volumes, classes, nodes)` and `plan_volume(volume, claim)`
are kube-controller-manager's syncClaim and syncVolume as decisions: they
look at the objects and return a plan (bind this volume, provision on that
node, set this phase, say this in an event, ...). The controller carries the
plan out through the API. Nothing here reads the clock or the network.

Claims:
- being deleted: nothing (the protection controller decides when it goes);
- unbound, no volumeName: the best fitting volume (pre-bound to it, else the
  smallest) is bound, unless its class binds WaitForFirstConsumer and no node
  was selected yet; failing that, a class whose provisioner is the local-path
  one provisions on the selected node; otherwise the claim stays Pending
  with an event saying why;
- volumeName set (pre-bound by the user or half-bound): the named volume is
  bound to it if it is free and fits; a volume bound elsewhere is a mismatch;
- bound: Lost when its volume is gone or now names another claim; otherwise
  its status capacity follows the volume's (expansion).

Volumes: Available without a claimRef; Bound while the claim exists and
names the volume; Released once the claim is gone, then reclaimed: Retain
keeps it Released, Delete removes a local-path volume (its agent deletes the
data) and fails any other with a clear message.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controlplane.api import volumes as v

Object = dict[str, Any]


@dataclass
class ClaimPlan:
    """One step for a claim; every field is optional."""

    bind_volume: Object | None = None  # the volume to bind the claim to
    provision_on: str = ""  # node for the local-path provisioner
    phase: str = ""  # a status phase to set on the claim
    capacity: Mapping[str, Any] | None = None  # status.capacity to set
    event: tuple[str, str, str] | None = None  # (type, reason, message)
    expand_to: str = ""  # a new capacity for the bound volume (expansion)


@dataclass
class VolumePlan:
    phase: str = ""
    message: str = ""
    delete: bool = False  # remove the volume object (reclaim Delete)
    clear_claim_uid: bool = False
    event: tuple[str, str, str] | None = None
    notes: list[str] = field(default_factory=list)


def class_of(claim: Mapping[str, Any], classes: Mapping[str, Object]) -> Object | None:
    return classes.get(v.claim_class(claim))


def plan_claim(
    claim: Mapping[str, Any],
    volumes: Iterable[Mapping[str, Any]],
    classes: Mapping[str, Object],
    node_roots: Mapping[str, str],
) -> ClaimPlan:
    """The next step for `claim`. `node_roots`: node name -> local-path root
    (only nodes whose agent runs the local-path provisioner)."""
    if v.meta(claim).get("deletionTimestamp"):
        return ClaimPlan()
    name = v.spec(claim).get("volumeName")
    by_name = {str(v.meta(pv).get("name")): pv for pv in volumes}
    if not name:
        return _plan_unbound(claim, list(by_name.values()), classes, node_roots)
    volume = by_name.get(str(name))
    phase = (claim.get("status") or {}).get("phase")
    if volume is None:
        if phase == "Bound":
            return ClaimPlan(
                phase="Lost",
                event=("Warning", "ClaimLost", f"Bound claim has lost reference to PersistentVolume {name}. Data on the volume is lost!"),
            )  # fmt: skip
        return ClaimPlan(
            phase="Pending",
            event=("Normal", "FailedBinding", f"volume {name!r} not found"),
        )
    ref = v.spec(volume).get("claimRef") or {}
    if not ref:
        reason = v.volume_fits(volume, claim)
        if reason is not None and reason != "volume is Released":
            return ClaimPlan(
                phase="Pending",
                event=("Warning", "VolumeMismatch", f"cannot bind to requested volume {name!r}: {reason}"),
            )  # fmt: skip
        return ClaimPlan(bind_volume=dict(volume))
    if not v.claim_ref_matches(volume, claim):
        if phase == "Bound":
            return ClaimPlan(
                phase="Lost",
                event=("Warning", "ClaimMisbound", "Two claims are bound to the same volume, this one is bound incorrectly"),
            )  # fmt: skip
        return ClaimPlan(
            phase="Pending",
            event=("Warning", "FailedBinding", f"volume {name!r} already bound to a different claim"),
        )  # fmt: skip
    if phase != "Bound" or not ref.get("uid"):
        return ClaimPlan(bind_volume=dict(volume))
    if v.claim_request(claim) > v.volume_capacity(volume):
        sc = class_of(claim, classes)
        provisioned = v.annotations_of(volume).get(v.PROVISIONED_BY_ANNOTATION)
        if (
            sc is not None
            and sc.get("allowVolumeExpansion")
            and provisioned == v.LOCAL_PATH_PROVISIONER
        ):
            requests = (v.spec(claim).get("resources") or {}).get("requests") or {}
            return ClaimPlan(expand_to=str(requests.get("storage")))
        return ClaimPlan(
            event=("Warning", "VolumeResizeFailed",
                   "only volumes of the skiff.io/local-path provisioner whose StorageClass "
                   "allows volume expansion can be resized"),
        )  # fmt: skip
    capacity = v.spec(volume).get("capacity") or {}
    if (claim.get("status") or {}).get("capacity") != capacity:
        return ClaimPlan(capacity=capacity)
    return ClaimPlan()


def _plan_unbound(
    claim: Mapping[str, Any],
    volumes: list[Mapping[str, Any]],
    classes: Mapping[str, Object],
    node_roots: Mapping[str, str],
) -> ClaimPlan:
    for pv in volumes:  # pre-bound to this claim, by the user or by the scheduler
        if v.claim_ref_matches(pv, claim) and v.volume_fits(pv, claim) is None:
            return ClaimPlan(bind_volume=dict(pv))
    sc = class_of(claim, classes)
    selected = v.annotations_of(claim).get(v.SELECTED_NODE_ANNOTATION, "")
    delayed = sc is not None and v.binding_mode(sc) == "WaitForFirstConsumer"
    if delayed and not selected:
        return ClaimPlan(
            phase="Pending",
            event=("Normal", "WaitForFirstConsumer",
                   "waiting for first consumer to be created before binding"),
        )  # fmt: skip
    if not delayed:
        best = v.best_volume(volumes, claim)
        if best is not None:
            return ClaimPlan(bind_volume=dict(best))
    # With a selected node, the scheduler already chose: a pre-bound volume
    # was bound by it, so what is left is provisioning.
    class_name = v.claim_class(claim)
    if sc is None:
        if class_name:
            return ClaimPlan(
                phase="Pending",
                event=("Warning", "ProvisioningFailed", f'storageclass.storage.k8s.io "{class_name}" not found'),
            )  # fmt: skip
        return ClaimPlan(
            phase="Pending", event=("Normal", "FailedBinding", v.why_no_volume(volumes, claim))
        )
    provisioner = str(sc.get("provisioner") or "")
    if provisioner == v.LOCAL_PATH_PROVISIONER:
        if not selected:
            return ClaimPlan(
                phase="Pending",
                event=("Warning", "ProvisioningFailed",
                       f"the {v.LOCAL_PATH_PROVISIONER} provisioner needs a node: use a StorageClass "
                       "with volumeBindingMode WaitForFirstConsumer"),
            )  # fmt: skip
        if selected not in node_roots:
            return ClaimPlan(
                phase="Pending",
                event=("Warning", "ProvisioningFailed",
                       f"node {selected!r} does not run the {v.LOCAL_PATH_PROVISIONER} provisioner "
                       f"(its Node has no {v.LOCAL_PATH_ROOT_ANNOTATION} annotation)"),
            )  # fmt: skip
        refusal = v.local_path_refusal(claim)
        if refusal is not None:
            return ClaimPlan(phase="Pending", event=("Warning", "ProvisioningFailed", refusal))
        return ClaimPlan(provision_on=selected)
    if provisioner == "kubernetes.io/no-provisioner":
        return ClaimPlan(
            phase="Pending", event=("Normal", "FailedBinding", v.why_no_volume(volumes, claim))
        )
    return ClaimPlan(
        phase="Pending",
        event=("Normal", "ExternalProvisioning",
               f"waiting for a volume to be created by the external provisioner {provisioner!r}; "
               "skiff runs no such provisioner"),
    )  # fmt: skip


def provisioned_volume(
    claim: Mapping[str, Any], sc: Mapping[str, Any], node: str, root: str
) -> Object:
    """The PersistentVolume the local-path provisioner creates for `claim` on `node`."""
    uid = str(v.meta(claim).get("uid") or "")
    name = f"pvc-{uid}"
    requests = (v.spec(claim).get("resources") or {}).get("requests") or {}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": name,
            "labels": {v.LOCAL_PATH_NODE_LABEL: node},
            "annotations": {v.PROVISIONED_BY_ANNOTATION: v.LOCAL_PATH_PROVISIONER},
            "finalizers": [v.LOCAL_PATH_FINALIZER],
        },
        "spec": {
            "capacity": {"storage": requests.get("storage")},
            "accessModes": v.access_modes(claim),
            "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
            "storageClassName": v.claim_class(claim),
            "volumeMode": "Filesystem",
            "local": {"path": v.local_path_for(root, name)},
            "nodeAffinity": v.node_affinity_for(node),
            "claimRef": v.claim_ref(claim),
        },
    }


def missing_node_label(volume: Mapping[str, Any]) -> str | None:
    """The node a local-path volume made before it carried its node label is
    pinned to (its agent watches by that label), None when it has it."""
    node = v.local_path_node(volume)
    if node is None or v.labels_of(volume).get(v.LOCAL_PATH_NODE_LABEL) == node:
        return None
    return node


def plan_volume(volume: Mapping[str, Any], claim: Mapping[str, Any] | None) -> VolumePlan:
    """The next step for `volume`; `claim` is the one its claimRef names, None when gone."""
    ref = v.spec(volume).get("claimRef") or {}
    phase = (volume.get("status") or {}).get("phase")
    if not ref:
        return VolumePlan(phase="Available") if phase != "Available" else VolumePlan()
    if not ref.get("uid"):
        # Pre-bound by the user to a claim that is not bound yet.
        return VolumePlan(phase="Available") if phase != "Available" else VolumePlan()
    if claim is not None and v.meta(claim).get("uid") == ref.get("uid"):
        if phase != "Bound":
            return VolumePlan(phase="Bound")
        return VolumePlan()
    # The claim is gone: release, then reclaim.
    if phase not in ("Released", "Failed"):
        return VolumePlan(phase="Released")
    if phase == "Failed" or v.meta(volume).get("deletionTimestamp"):
        return VolumePlan()
    policy = v.spec(volume).get("persistentVolumeReclaimPolicy") or "Retain"
    if policy == "Retain":
        return VolumePlan()
    if policy == "Recycle":  # deprecated; Kubernetes fails it where no recycler plugin matches
        return VolumePlan(
            phase="Failed",
            message="reclaim policy Recycle: no volume plugin can recycle this volume",
            event=("Warning", "VolumeFailedRecycle", "No recycler plugin found for the volume!"),
        )
    if v.annotations_of(volume).get(v.PROVISIONED_BY_ANNOTATION) == v.LOCAL_PATH_PROVISIONER:
        return VolumePlan(delete=True)
    return VolumePlan(
        phase="Failed",
        message="reclaim policy Delete: only volumes the skiff.io/local-path provisioner "
        "created can be deleted; remove the data and the volume by hand",
        event=("Warning", "VolumeFailedDelete", "no deletable volume plugin matched"),
    )


def bound_volume(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> Object:
    """`volume` with its claimRef naming `claim` (uid included)."""
    out = copy.deepcopy(dict(volume))
    out["spec"]["claimRef"] = v.claim_ref(claim)
    if not (v.spec(volume).get("claimRef") or {}).get("uid"):
        out["metadata"].setdefault("annotations", {})[v.BOUND_BY_CONTROLLER_ANNOTATION] = "yes"
    return out


def bound_claim(claim: Mapping[str, Any], volume: Mapping[str, Any]) -> Object:
    """`claim` with spec.volumeName naming `volume` and the bind annotations."""
    out = copy.deepcopy(dict(claim))
    ann = out["metadata"].setdefault("annotations", {})
    ann[v.BIND_COMPLETED_ANNOTATION] = "yes"
    if not v.spec(claim).get("volumeName"):
        ann[v.BOUND_BY_CONTROLLER_ANNOTATION] = "yes"
    out["spec"]["volumeName"] = v.meta(volume)["name"]
    return out


def claim_status(volume: Mapping[str, Any]) -> Object:
    return {
        "phase": "Bound",
        "accessModes": v.access_modes(volume),
        "capacity": dict(v.spec(volume).get("capacity") or {}),
    }


def claim_in_use(claim_key: str, pods: Iterable[Mapping[str, Any]]) -> list[str]:
    """Names of the pods that still use the claim `ns/name` (not terminated)."""
    ns, _, name = claim_key.partition("/")
    users = []
    for pod in pods:
        if (pod.get("metadata") or {}).get("namespace", "default") != ns:
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        if name in v.pod_claim_names(pod):
            users.append(str(pod["metadata"]["name"]))
    return users
