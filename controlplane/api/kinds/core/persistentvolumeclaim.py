"""PersistentVolumeClaim (v1): a user's request for storage.

- Validation: the claim spec (shared/claims.py), status.phase; access
  modes, selector, volumeMode, a set storageClassName and dataSource are
  immutable, volumeName once bound, and the request may not shrink.
- Defaults: volumeMode Filesystem, phase Pending.
- Admission on create: a claim that names no class (`storageClassName`
  absent, not "") gets the default StorageClass (DefaultStorageClass);
  every claim gets the `kubernetes.io/pvc-protection` finalizer
  (StorageObjectInUseProtection), so deleting a claim a pod uses leaves it
  Terminating until the pod is gone. On update: a larger request only for a
  bound claim whose class has allowVolumeExpansion (PersistentVolumeClaimResize).
- Columns: NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS AGE; wide
  adds VOLUMEMODE.
"""

from __future__ import annotations

from typing import Any

from controlplane.api import volumes
from controlplane.api.checks import Errors, enum, mapping
from controlplane.api.display import age, name, spec, status
from controlplane.api.kinds.definition import AdmissionApi, KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared import claims
from controlplane.api.kinds.shared.fill import child
from controlplane.api.kinds.shared.meta import add_finalizer
from controlplane.api.quantity import parse_quantity
from controlplane.api.schema import CORE, declare
from controlplane.client.errors import Forbidden

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    claim_spec: Any = obj.get("spec")
    claims.validate_spec(e, "spec", claim_spec)
    claim_status: Any = obj.get("status")
    if mapping(e, "status", claim_status):
        enum(e, "status.phase", claim_status.get("phase"), ("Pending", "Bound", "Lost"))
    if old is None or not isinstance(claim_spec, dict):
        return
    old_spec: Any = old.get("spec") or {}
    for field in ("accessModes", "selector", "volumeMode", "storageClassName", "dataSource"):
        if old_spec.get(field) != claim_spec.get(field) and not (
            field == "storageClassName" and old_spec.get(field) is None
        ):
            e.add(f"spec.{field}", "field is immutable after creation")
    if old_spec.get("volumeName") and old_spec.get("volumeName") != claim_spec.get("volumeName"):
        e.add("spec.volumeName", "field is immutable once the claim is bound")
    old_req = ((old_spec.get("resources") or {}).get("requests") or {}).get("storage")
    new_req = ((claim_spec.get("resources") or {}).get("requests") or {}).get("storage")
    if old_req is not None and new_req is not None and old_req != new_req:
        try:
            if parse_quantity(new_req) < parse_quantity(old_req):
                e.add(
                    "spec.resources.requests.storage", "field can not be less than previous value"
                )
        except ValueError:
            pass


def defaults(obj: Object) -> None:
    child(obj, "spec").setdefault("volumeMode", "Filesystem")
    child(obj, "status").setdefault("phase", "Pending")


def admit(api: AdmissionApi, info: KindInfo, obj: Object, old: Object | None) -> None:
    if old is not None:
        _admit_resize(api, obj, old)
        return
    claim_spec = obj.setdefault("spec", {})
    if isinstance(claim_spec, dict) and "storageClassName" not in claim_spec:
        default = volumes.default_class(api.cached_objects("StorageClass"))
        if default is not None:
            claim_spec["storageClassName"] = default["metadata"]["name"]
    add_finalizer(obj, volumes.PVC_PROTECTION)


def _admit_resize(api: AdmissionApi, obj: Object, old: Object) -> None:
    """PersistentVolumeClaimResize: a larger request only where the class allows expansion."""
    if volumes.claim_request(obj) <= volumes.claim_request(old):
        return
    class_name = volumes.claim_class(obj)
    sc = next(
        (c for c in api.cached_objects("StorageClass") if c["metadata"]["name"] == class_name),
        None,
    )
    if not volumes.spec(old).get("volumeName") or sc is None or not sc.get("allowVolumeExpansion"):
        raise Forbidden(
            "only dynamically provisioned pvc can be resized and the storageclass that "
            "provisions the pvc must support resize"
        )


def row(obj: Object, now: float, wide: bool) -> list[str]:
    cells = [
        name(obj),
        str(status(obj).get("phase", "")),
        str(spec(obj).get("volumeName", "")),
        str((status(obj).get("capacity") or {}).get("storage", "")),
        volumes.modes_text(status(obj).get("accessModes") or []),
        volumes.claim_class(obj),
        str(spec(obj).get("volumeAttributesClassName") or "<unset>"),
        age(obj, now),
    ]
    return cells + ([str(spec(obj).get("volumeMode", "Filesystem"))] if wide else [])


DEFINITION = KindDef(
    KindInfo("PersistentVolumeClaim", "v1", short_names=("pvc",)),
    types={
        **declare(
            CORE,
            """
            PersistentVolumeClaim [v1 PersistentVolumeClaim]: PersistentVolumeClaim is a user's
                    request for and claim to a persistent volume.
                spec    PersistentVolumeClaimSpec
                status  object
            PersistentVolumeClaimSpec: PersistentVolumeClaimSpec describes the storage a claim asks
                                       for.
                accessModes                []string       The access modes the volume should have.
                selector                   LabelSelector  A label query over volumes to consider for
                                                          binding.
                resources                  object         The minimum resources the volume should
                                                          have (requests, limits).
                volumeName                 string         The binding reference to the volume
                                                          backing this claim.
                storageClassName           string         The name of the StorageClass required by
                                                          the claim.
                volumeMode                 string         Filesystem or Block.
                dataSource                 object         An existing object to populate the volume
                                                          from.
                dataSourceRef              object         An object to populate the volume from (any
                                                          group).
                volumeAttributesClassName  string         The VolumeAttributesClass used by this
                                                          claim.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
    admit=admit,
    printer=Printer(
        columns(
            (
                "NAME",
                "STATUS",
                "VOLUME",
                "CAPACITY",
                "ACCESS MODES",
                "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS",
                "AGE",
            ),
            ("VOLUMEMODE",),
        ),
        row,
    ),
)
