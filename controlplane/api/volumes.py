"""What PersistentVolumes, claims and StorageClasses mean: names, constants and matching.

The one home of the storage semantics that the API server (admission), the
controllers (binding, protection, provisioning, StatefulSet claims), the
scheduler's volume plugins and the agent share: the annotations and
finalizers Kubernetes defines, access-mode and capacity arithmetic, which
volume a claim may bind (`volume_fits`, `best_volume`: the smallest fitting
one), the default StorageClass, and the claim name a StatefulSet ordinal gets.

Pure functions over plain dicts: no storage, no client, no I/O. A node
affinity check is passed in as a callable, so this module needs no node
selector engine of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from controlplane.api.quantity import parse_quantity
from controlplane.api.selectors import SelectorError, from_structured

Object = Mapping[str, Any]

# Kubernetes' names.
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_DEFAULT_CLASS_ANNOTATION = "storageclass.beta.kubernetes.io/is-default-class"
SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"
PROVISIONER_ANNOTATION = "volume.kubernetes.io/storage-provisioner"
BETA_PROVISIONER_ANNOTATION = "volume.beta.kubernetes.io/storage-provisioner"
PROVISIONED_BY_ANNOTATION = "pv.kubernetes.io/provisioned-by"
BOUND_BY_CONTROLLER_ANNOTATION = "pv.kubernetes.io/bound-by-controller"
BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"
PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"
HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")

# skiff's built-in local dynamic provisioner.
LOCAL_PATH_PROVISIONER = "skiff.io/local-path"
LOCAL_PATH_CLASS = "local-path"
# The agent that runs the local-path provisioner's node side says where its
# volumes live with this annotation on its own Node.
LOCAL_PATH_ROOT_ANNOTATION = "storage.skiff.io/local-path-root"
# ... and labels its Node so, so that schedulers and users can select such nodes.
LOCAL_PATH_LABEL = "storage.skiff.io/local-path"
# What the agent found out about a provisioned volume: "ready" once its
# directory exists, and how its size limit is enforced (or why it is not).
LOCAL_PATH_STATE_ANNOTATION = "storage.skiff.io/local-path-state"
LOCAL_PATH_QUOTA_ANNOTATION = "storage.skiff.io/local-path-quota"
# Held by a provisioned local-path PV until its node's agent removed the data.
LOCAL_PATH_FINALIZER = "storage.skiff.io/local-path-cleanup"
# The node a provisioned local-path PV is pinned to: its agent lists and
# watches PersistentVolumes with this label = its name, and only so (the
# node authorizer lets a node read no other volume but its pods' claims').
LOCAL_PATH_NODE_LABEL = "storage.skiff.io/local-path-node"

ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
ACCESS_MODE_SHORT = {
    "ReadWriteOnce": "RWO",
    "ReadOnlyMany": "ROX",
    "ReadWriteMany": "RWX",
    "ReadWriteOncePod": "RWOP",
}


def meta(obj: Object) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def spec(obj: Object) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def annotations_of(obj: Object) -> Mapping[str, str]:
    return meta(obj).get("annotations") or {}


def labels_of(obj: Object) -> Mapping[str, str]:
    return meta(obj).get("labels") or {}


def storage_of(resources: Mapping[str, Any] | None) -> int:
    """The `storage` quantity of a capacity or requests map in bytes (0 when absent or bad)."""
    value = (resources or {}).get("storage")
    if value is None:
        return 0
    try:
        return int(parse_quantity(value))
    except (ValueError, TypeError):
        return 0


def claim_request(pvc: Object) -> int:
    return storage_of((spec(pvc).get("resources") or {}).get("requests"))


def volume_capacity(pv: Object) -> int:
    return storage_of(spec(pv).get("capacity"))


def claim_class(pvc: Object) -> str:
    """The claim's class name ("" for none): spec.storageClassName, or the beta annotation."""
    name = spec(pvc).get("storageClassName")
    if name is None:
        name = annotations_of(pvc).get("volume.beta.kubernetes.io/storage-class")
    return str(name or "")


def volume_class(pv: Object) -> str:
    name = spec(pv).get("storageClassName")
    if name is None:
        name = annotations_of(pv).get("volume.beta.kubernetes.io/storage-class")
    return str(name or "")


def is_default_class(sc: Object) -> bool:
    ann = annotations_of(sc)
    return "true" in (ann.get(DEFAULT_CLASS_ANNOTATION), ann.get(BETA_DEFAULT_CLASS_ANNOTATION))


def default_class(classes: Iterable[Object]) -> Object | None:
    """The default StorageClass: of several, the newest (as Kubernetes picks), then by name."""
    marked = [c for c in classes if is_default_class(c)]
    if not marked:
        return None
    marked.sort(key=lambda c: (str(meta(c).get("creationTimestamp") or ""), str(meta(c)["name"])))
    return marked[-1]


def binding_mode(sc: Object | None) -> str:
    return str((sc or {}).get("volumeBindingMode") or "Immediate")


def access_modes(obj: Object) -> list[str]:
    return [str(m) for m in spec(obj).get("accessModes") or []]


def modes_text(modes: Iterable[str]) -> str:
    return ",".join(ACCESS_MODE_SHORT.get(m, m) for m in modes)


def is_bound_claim(pvc: Object) -> bool:
    return bool(spec(pvc).get("volumeName")) and (pvc.get("status") or {}).get("phase") == "Bound"


def claim_ref_matches(pv: Object, pvc: Object) -> bool:
    """Whether the volume's claimRef names this claim (and, when it has a uid, this one)."""
    ref = spec(pv).get("claimRef") or {}
    if not ref:
        return False
    m = meta(pvc)
    if ref.get("name") != m.get("name") or (ref.get("namespace") or "default") != (
        m.get("namespace") or "default"
    ):
        return False
    return not ref.get("uid") or ref.get("uid") == m.get("uid")


def claim_ref(pvc: Object) -> dict[str, Any]:
    m = meta(pvc)
    return {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": m.get("namespace") or "default",
        "name": m.get("name"),
        "uid": m.get("uid"),
        "resourceVersion": m.get("resourceVersion", ""),
    }


def volume_fits(
    pv: Object,
    pvc: Object,
    node_ok: Callable[[Object], bool] | None = None,
) -> str | None:
    """Why `pv` cannot serve `pvc`, or None when it can.

    Kubernetes' FindMatchingVolume rules: not being deleted, unclaimed or
    pre-bound to this claim, the same class, a volume mode, every requested
    access mode, enough capacity, the claim's selector, and (when `node_ok`
    is given) node affinity to the node being considered.
    """
    if meta(pv).get("deletionTimestamp"):
        return "volume is being deleted"
    ref = spec(pv).get("claimRef")
    if ref and not claim_ref_matches(pv, pvc):
        return "volume is bound to another claim"
    phase = (pv.get("status") or {}).get("phase")
    if phase in ("Released", "Failed") and not claim_ref_matches(pv, pvc):
        return f"volume is {phase}"
    if volume_class(pv) != claim_class(pvc):
        return "storage class differs"
    if (spec(pv).get("volumeMode") or "Filesystem") != (
        spec(pvc).get("volumeMode") or "Filesystem"
    ):
        return "volume mode differs"
    missing = set(access_modes(pvc)) - set(access_modes(pv))
    if missing:
        return f"access modes {modes_text(sorted(missing))} not offered"
    if volume_capacity(pv) < claim_request(pvc):
        return "capacity too small"
    selector = spec(pvc).get("selector")
    if selector:
        try:
            if not from_structured(selector).matches(dict(meta(pv).get("labels") or {})):
                return "labels do not match the claim's selector"
        except SelectorError:
            return "claim's selector is invalid"
    if node_ok is not None and not node_ok(pv):
        return "volume node affinity conflict"
    return None


def best_volume(
    pvs: Iterable[Object],
    pvc: Object,
    node_ok: Callable[[Object], bool] | None = None,
) -> Object | None:
    """The volume `pvc` should bind: one pre-bound to it if it fits, else the smallest fitting one."""
    best: Object | None = None
    for pv in pvs:
        if volume_fits(pv, pvc, node_ok) is not None:
            continue
        if spec(pv).get("claimRef"):
            return pv  # pre-bound to this very claim
        if best is None or volume_capacity(pv) < volume_capacity(best):
            best = pv
    return best


def why_no_volume(pvs: Iterable[Object], pvc: Object) -> str:
    """A short account of why no volume fits a claim, for its event."""
    counts: dict[str, int] = {}
    for pv in pvs:
        reason = volume_fits(pv, pvc)
        if reason is not None:
            counts[reason] = counts.get(reason, 0) + 1
    cls = claim_class(pvc) or '""'
    head = (
        f"no persistent volumes available for this claim (class {cls}, "
        f"{modes_text(access_modes(pvc))}, {spec(pvc).get('resources', {}).get('requests', {}).get('storage', '?')})"
    )
    if not counts:
        return head + " and no storage class is set to provision one"
    return head + ": " + ", ".join(f"{n} {r}" for r, n in sorted(counts.items()))


def volume_node_names(pv: Object) -> list[str] | None:
    """The node names a volume's nodeAffinity pins it to by hostname or name, or None."""
    terms = (
        ((spec(pv).get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms")
    ) or []
    names: list[str] = []
    for term in terms:
        for expr in term.get("matchExpressions") or []:
            if expr.get("key") == HOSTNAME_LABEL and expr.get("operator") == "In":
                names.extend(str(v) for v in expr.get("values") or [])
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("operator") == "In":
                names.extend(str(v) for v in field.get("values") or [])
    return names or None


def node_affinity_for(node: str) -> dict[str, Any]:
    """A PV nodeAffinity pinning a volume to one node by hostname."""
    return {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": [node]}]}
            ]
        }
    }


def volume_path(pv: Object) -> str:
    """The host path of a local or hostPath volume ("" for other sources)."""
    s = spec(pv)
    for source in ("local", "hostPath"):
        if isinstance(s.get(source), dict):
            return str(s[source].get("path") or "")
    return ""


def pod_claim_names(pod: Object) -> list[str]:
    """The claims a pod's volumes name, in order."""
    out = []
    for v in spec(pod).get("volumes") or []:
        src = v.get("persistentVolumeClaim") if isinstance(v, dict) else None
        if isinstance(src, dict) and src.get("claimName"):
            out.append(str(src["claimName"]))
    return out


def template_claim_name(template: str, set_name: str, ordinal: int) -> str:
    """The claim a StatefulSet pod gets from one of its volumeClaimTemplates."""
    return f"{template}-{set_name}-{ordinal}"


def local_path_for(root: str, pv_name: str) -> str:
    """Where the local-path provisioner keeps a volume on its node."""
    return f"{root.rstrip('/')}/{pv_name}"


def local_path_node_writable(old: Object | None, new: Object | None, node: str) -> bool:
    """Whether `node`'s agent may write this change of a PersistentVolume: one the
    local-path provisioner made on that node, whose spec stays as it was (the
    agent records annotations and lifts its cleanup finalizer, nothing more:
    its labels, which say which node may watch it, stay too)."""
    if old is None or new is None:
        return False
    if annotations_of(old).get(PROVISIONED_BY_ANNOTATION) != LOCAL_PATH_PROVISIONER:
        return False
    if (volume_node_names(old) or []) != [node]:
        return False
    return spec(old) == spec(new) and labels_of(old) == labels_of(new)


def local_path_node(volume: Object) -> str | None:
    """The one node a local-path provisioned volume is pinned to (None for others)."""
    if annotations_of(volume).get(PROVISIONED_BY_ANNOTATION) != LOCAL_PATH_PROVISIONER:
        return None
    nodes = volume_node_names(volume) or []
    return nodes[0] if len(nodes) == 1 else None


def local_path_refusal(claim: Object) -> str | None:
    """Why the local-path provisioner cannot serve `claim`, or None when it can."""
    unsupported = set(access_modes(claim)) - {"ReadWriteOnce", "ReadWriteOncePod"}
    if unsupported:
        return (
            f"the {LOCAL_PATH_PROVISIONER} provisioner serves only ReadWriteOnce and "
            f"ReadWriteOncePod, not {modes_text(sorted(unsupported))}"
        )
    if spec(claim).get("selector"):
        return "claim Selector is not supported for dynamically provisioned volumes"
    return None
