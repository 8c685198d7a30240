"""A PersistentVolumeClaim's spec, as a claim and a StatefulSet's
volumeClaimTemplates have it, and the storage checks volumes share: access
modes, a storage size. Pure functions."""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors, enum, items, mapping, name, quantity, selector


def storage_size(e: Errors, path: str, resources: Any, required: bool = True) -> None:
    """A capacity/requests map's `storage`: present and > 0."""
    if not mapping(e, path, resources, required=required):
        return
    if "storage" not in resources:
        e.add(f"{path}.storage", "required")
        return
    q = quantity(e, f"{path}.storage", resources["storage"])
    if q is not None and q <= 0:
        e.add(f"{path}.storage", "must be greater than zero")


def access_modes(e: Errors, path: str, modes: Any) -> None:
    if not items(e, path, modes, required=True):
        return
    allowed = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
    for i, mode in enumerate(modes):
        enum(e, f"{path}[{i}]", mode, allowed)
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        e.add(path, "may not use ReadWriteOncePod with other access modes")


def validate_spec(e: Errors, path: str, spec: Any) -> None:
    """A claim's spec: access modes, a storage request, class, selector,
    volume mode, volume name; no data sources (skiff cannot populate one)."""
    if not mapping(e, path, spec, required=True):
        return
    access_modes(e, f"{path}.accessModes", spec.get("accessModes"))
    resources: Any = spec.get("resources")
    if mapping(e, f"{path}.resources", resources, required=True):
        storage_size(e, f"{path}.resources.requests", resources.get("requests"))
    class_name: Any = spec.get("storageClassName")
    if class_name:
        name(e, f"{path}.storageClassName", class_name)
    if spec.get("selector") is not None:
        selector(e, f"{path}.selector", spec.get("selector"), required=False)
    enum(e, f"{path}.volumeMode", spec.get("volumeMode"), ("Filesystem",))
    volume_name: Any = spec.get("volumeName")
    if volume_name:
        name(e, f"{path}.volumeName", volume_name)
    for field in ("dataSource", "dataSourceRef"):
        if spec.get(field):
            e.add(
                f"{path}.{field}",
                "not supported: skiff cannot populate a volume from a data source",
            )
