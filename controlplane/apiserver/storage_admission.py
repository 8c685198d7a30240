"""Admission for storage kinds: what Kubernetes' admission plugins do for them.

- PersistentVolumeClaim, on create: a claim that names no class
  (`storageClassName` absent, not "") gets the default StorageClass
  (DefaultStorageClass); every claim gets the `kubernetes.io/pvc-protection`
  finalizer (StorageObjectInUseProtection), so deleting a claim a pod uses
  leaves it Terminating until the pod is gone.
- PersistentVolumeClaim, on update: a larger storage request only for a
  bound claim whose class has allowVolumeExpansion (PersistentVolumeClaimResize).
- PersistentVolume, on create: the `kubernetes.io/pv-protection` finalizer,
  so a bound volume is not removed under its claim.

Hooks have the signature of `registry.Admit`; they mutate the object being
written and never read anything but the StorageClasses.
"""

from __future__ import annotations

from controlplane.api import volumes
from controlplane.api.kinds import KindInfo
from controlplane.apiserver.codec import Object
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import AlreadyExists, Forbidden


def _add_finalizer(obj: Object, name: str) -> None:
    meta = obj.setdefault("metadata", {})
    finalizers = meta.setdefault("finalizers", [])
    if isinstance(finalizers, list) and name not in finalizers:
        finalizers.append(name)


def admit_claim(registry: Registry, info: KindInfo, obj: Object, old: Object | None) -> None:
    if old is not None:
        _admit_resize(registry, obj, old)
        return
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict) and "storageClassName" not in spec:
        default = volumes.default_class(registry.cached_objects("StorageClass"))
        if default is not None:
            spec["storageClassName"] = default["metadata"]["name"]
    _add_finalizer(obj, volumes.PVC_PROTECTION)


def _admit_resize(registry: Registry, obj: Object, old: Object) -> None:
    """PersistentVolumeClaimResize: a larger request only where the class allows expansion."""
    if volumes.claim_request(obj) <= volumes.claim_request(old):
        return
    name = volumes.claim_class(obj)
    sc = next(
        (c for c in registry.cached_objects("StorageClass") if c["metadata"]["name"] == name), None
    )
    if not volumes.spec(old).get("volumeName") or sc is None or not sc.get("allowVolumeExpansion"):
        raise Forbidden(
            "only dynamically provisioned pvc can be resized and the storageclass that "
            "provisions the pvc must support resize"
        )


def admit_volume(registry: Registry, info: KindInfo, obj: Object, old: Object | None) -> None:
    if old is None:
        _add_finalizer(obj, volumes.PV_PROTECTION)


ADMISSION = {
    "PersistentVolumeClaim": admit_claim,
    "PersistentVolume": admit_volume,
}


def local_path_class() -> Object:
    """The built-in default StorageClass of the local-path provisioner."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": volumes.LOCAL_PATH_CLASS,
            "annotations": {volumes.DEFAULT_CLASS_ANNOTATION: "true"},
        },
        "provisioner": volumes.LOCAL_PATH_PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowVolumeExpansion": True,
    }


def ensure_local_path_class(registry: Registry) -> None:
    """Create the `local-path` StorageClass at bootstrap unless it exists."""
    try:
        registry.create("StorageClass", local_path_class())
    except AlreadyExists:
        pass
