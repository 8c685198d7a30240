"""The built-in default StorageClass (`local-path`), created at bootstrap."""

from __future__ import annotations

from controlplane.api import volumes
from controlplane.apiserver.codec import Object
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import AlreadyExists


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
