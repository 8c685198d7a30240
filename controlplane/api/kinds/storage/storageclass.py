"""StorageClass (storage.k8s.io/v1, cluster-scoped): a class of dynamically
provisioned volumes.

Validation: provisioner a qualified name (or kubernetes.io/no-provisioner),
reclaimPolicy, volumeBindingMode, parameters strings, allowVolumeExpansion a
boolean; provisioner, parameters, reclaimPolicy and volumeBindingMode are
immutable. Defaults: reclaimPolicy Delete, volumeBindingMode Immediate.
Columns: NAME (marked "(default)") PROVISIONER RECLAIMPOLICY
VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE. `local_path_class()` is the
built-in default class the API server creates at bootstrap.
"""

from __future__ import annotations

from typing import Any

from controlplane.api import volumes
from controlplane.api.checks import Errors, enum, is_qualified_name, mapping
from controlplane.api.display import age, name
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.schema import declare

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    provisioner: Any = obj.get("provisioner")
    if not isinstance(provisioner, str) or not provisioner:
        e.add("provisioner", "required")
    elif not is_qualified_name(provisioner) and provisioner != "kubernetes.io/no-provisioner":
        e.add("provisioner", f"{provisioner!r} must be a qualified name")
    enum(e, "reclaimPolicy", obj.get("reclaimPolicy"), ("Retain", "Delete"))
    enum(e, "volumeBindingMode", obj.get("volumeBindingMode"),
         ("Immediate", "WaitForFirstConsumer"))  # fmt: skip
    params: Any = obj.get("parameters")
    if mapping(e, "parameters", params):
        for key, value in params.items():
            if not isinstance(value, str):
                e.add(f"parameters.{key}", "must be a string")
    if "allowVolumeExpansion" in obj and not isinstance(obj["allowVolumeExpansion"], bool):
        e.add("allowVolumeExpansion", "must be a boolean")
    if old is not None:
        for field in ("provisioner", "parameters", "reclaimPolicy", "volumeBindingMode"):
            if old.get(field) != obj.get(field):
                e.add(field, "field is immutable")


def defaults(obj: Object) -> None:
    obj.setdefault("reclaimPolicy", "Delete")
    obj.setdefault("volumeBindingMode", "Immediate")


def row(obj: Object, now: float, wide: bool) -> list[str]:
    return [
        name(obj) + (" (default)" if volumes.is_default_class(obj) else ""),
        str(obj.get("provisioner", "")),
        str(obj.get("reclaimPolicy", "Delete")),
        str(obj.get("volumeBindingMode", "Immediate")),
        str(bool(obj.get("allowVolumeExpansion"))).lower(),
        age(obj, now),
    ]


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


DEFINITION = KindDef(
    KindInfo(
        "StorageClass", "storage.k8s.io/v1", short_names=("sc",), namespaced=False, has_status=False
    ),
    types={
        **declare(
            "io.k8s.api.storage.v1",
            """
            StorageClass [storage.k8s.io/v1 StorageClass]: StorageClass describes the parameters for
                    a class of storage.
                provisioner!          string    The provisioner of volumes of this class.
                parameters            map       Parameters for the provisioner.
                reclaimPolicy         string    Delete or Retain, for volumes this class provisions.
                mountOptions          []string  Mount options of volumes this class provisions.
                allowVolumeExpansion  boolean   Whether claims of this class may grow.
                volumeBindingMode     string    Immediate or WaitForFirstConsumer.
                allowedTopologies     []object  Where volumes of this class can be provisioned.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
    printer=Printer(
        columns(
            (
                "NAME",
                "PROVISIONER",
                "RECLAIMPOLICY",
                "VOLUMEBINDINGMODE",
                "ALLOWVOLUMEEXPANSION",
                "AGE",
            )
        ),
        row,
    ),
)
