"""PersistentVolume (v1, cluster-scoped): a piece of storage.

- Validation: capacity.storage > 0, access modes, reclaim policy, one volume
  source, of those skiff mounts (hostPath, local: an absolute path without
  '..'; a local volume needs nodeAffinity), no mount options; the source,
  volumeMode and a set nodeAffinity are immutable.
- Defaults: reclaim policy Retain, volumeMode Filesystem, phase Pending.
- Admission on create: the `kubernetes.io/pv-protection` finalizer, so a
  bound volume is not removed under its claim.
- Columns: NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM
  STORAGECLASS REASON AGE; wide adds VOLUMEMODE.
"""

from __future__ import annotations

from typing import Any

from controlplane.api import volumes
from controlplane.api.checks import Errors, each_object, enum, items, mapping, name
from controlplane.api.display import age, spec, status
from controlplane.api.display import name as name_of
from controlplane.api.kinds.definition import AdmissionApi, KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.claims import access_modes, storage_size
from controlplane.api.kinds.shared.fill import child
from controlplane.api.kinds.shared.meta import add_finalizer
from controlplane.api.schema import CORE, declare, struct

Object = dict[str, Any]

_VOLUME_SOURCES = ("hostPath", "local")
_KNOWN_VOLUME_SOURCES = (
    "hostPath", "local", "nfs", "iscsi", "csi", "cephfs", "rbd", "fc", "azureDisk", "azureFile",
    "gcePersistentDisk", "awsElasticBlockStore", "cinder", "flexVolume", "glusterfs",
    "portworxVolume", "vsphereVolume", "quobyte", "scaleIO", "storageos", "photonPersistentDisk",
    "flocker",
)  # fmt: skip
# The sources the schema declares (Kubernetes' PersistentVolumeSource), in its order.
_PV_SOURCES = (
    "awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc",
    "flexVolume", "flocker", "gcePersistentDisk", "glusterfs", "hostPath", "iscsi", "local",
    "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos",
    "vsphereVolume",
)  # fmt: skip

# ---- validation -----------------------------------------------------------------------


def _host_path(e: Errors, path: str, value: Any) -> None:
    if not isinstance(value, str) or not value:
        e.add(path, "required")
    elif not value.startswith("/"):
        e.add(path, f"{value!r} must be an absolute path")
    elif ".." in value.split("/"):
        e.add(path, f"{value!r} must not contain '..'")
    elif "\x00" in value:
        e.add(path, "must not contain NUL")


def _node_selector_terms(e: Errors, path: str, selector: Any) -> None:
    if not mapping(e, path, selector, required=True):
        return
    terms: Any = selector.get("nodeSelectorTerms")
    if not items(e, f"{path}.nodeSelectorTerms", terms, required=True):
        return
    ops = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
    for tpath, term in each_object(e, f"{path}.nodeSelectorTerms", terms, required=True):
        for field in ("matchExpressions", "matchFields"):
            exprs: Any = term.get(field)
            if not items(e, f"{tpath}.{field}", exprs):
                continue
            for epath, expr in each_object(e, f"{tpath}.{field}", exprs, required=True):
                if not expr.get("key"):
                    e.add(f"{epath}.key", "required")
                enum(e, f"{epath}.operator", expr.get("operator"), ops)
                if expr.get("operator") in ("In", "NotIn") and not expr.get("values"):
                    e.add(f"{epath}.values", "required for operator In or NotIn")


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    pv_spec: Any = obj.get("spec")
    if not mapping(e, "spec", pv_spec, required=True):
        return
    storage_size(e, "spec.capacity", pv_spec.get("capacity"))
    access_modes(e, "spec.accessModes", pv_spec.get("accessModes"))
    # Recycle is deprecated, still accepted as Kubernetes does.
    enum(e, "spec.persistentVolumeReclaimPolicy", pv_spec.get("persistentVolumeReclaimPolicy"),
         ("Retain", "Delete", "Recycle"))  # fmt: skip
    enum(e, "spec.volumeMode", pv_spec.get("volumeMode"), ("Filesystem",))
    sources = [k for k in _KNOWN_VOLUME_SOURCES if k in pv_spec]
    if not sources:
        e.add("spec", "must specify a volume source (hostPath or local)")
    elif len(sources) > 1:
        e.add("spec", f"may specify only one volume source, not {', '.join(sources)}")
    else:
        source = sources[0]
        if source not in _VOLUME_SOURCES:
            e.add(f"spec.{source}", "unsupported volume source: supported sources: hostPath, local")
        elif mapping(e, f"spec.{source}", pv_spec[source], required=True):
            _host_path(e, f"spec.{source}.path", pv_spec[source].get("path"))
            if source == "hostPath":
                enum(e, "spec.hostPath.type", pv_spec[source].get("type") or None,
                     ("DirectoryOrCreate", "Directory"))  # fmt: skip
            elif not pv_spec.get("nodeAffinity"):
                e.add("spec.nodeAffinity", "required for a local volume")
    affinity: Any = pv_spec.get("nodeAffinity")
    if mapping(e, "spec.nodeAffinity", affinity):
        _node_selector_terms(e, "spec.nodeAffinity.required", affinity.get("required"))
    class_name: Any = pv_spec.get("storageClassName")
    if class_name:
        name(e, "spec.storageClassName", class_name)
    ref: Any = pv_spec.get("claimRef")
    if mapping(e, "spec.claimRef", ref) and not ref.get("name"):
        e.add("spec.claimRef.name", "required")
    if pv_spec.get("mountOptions"):
        # As Kubernetes: hostPath and local volumes are bind mounts, without options.
        e.add("spec.mountOptions", "may not specify mount options for this volume type")
    pv_status: Any = obj.get("status")
    if mapping(e, "status", pv_status):
        enum(e, "status.phase", pv_status.get("phase"),
             ("Pending", "Available", "Bound", "Released", "Failed"))  # fmt: skip
    if old is not None:
        old_spec: Any = old.get("spec") or {}
        for field in (*_VOLUME_SOURCES, "volumeMode"):
            if old_spec.get(field) != pv_spec.get(field):
                e.add(f"spec.{field}", "field is immutable")
        if old_spec.get("nodeAffinity") and old_spec.get("nodeAffinity") != pv_spec.get(
            "nodeAffinity"
        ):
            e.add("spec.nodeAffinity", "field is immutable once set")


def defaults(obj: Object) -> None:
    pv_spec = child(obj, "spec")
    pv_spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    pv_spec.setdefault("volumeMode", "Filesystem")
    child(obj, "status").setdefault("phase", "Pending")


def admit(api: AdmissionApi, info: KindInfo, obj: Object, old: Object | None) -> None:
    if old is None:
        add_finalizer(obj, volumes.PV_PROTECTION)


def row(obj: Object, now: float, wide: bool) -> list[str]:
    ref = spec(obj).get("claimRef") or {}
    claim = f"{ref.get('namespace', '')}/{ref['name']}" if ref.get("name") else ""
    cells = [
        name_of(obj),
        str((spec(obj).get("capacity") or {}).get("storage", "")),
        volumes.modes_text(volumes.access_modes(obj)) or "<unset>",
        str(spec(obj).get("persistentVolumeReclaimPolicy", "")),
        str(status(obj).get("phase", "")),
        claim,
        volumes.volume_class(obj),
        str(spec(obj).get("volumeAttributesClassName") or "<unset>"),
        str(status(obj).get("reason", "")),
        age(obj, now),
    ]
    return cells + ([str(spec(obj).get("volumeMode", "Filesystem"))] if wide else [])


DEFINITION = KindDef(
    KindInfo("PersistentVolume", "v1", short_names=("pv",), namespaced=False),
    types={
        **declare(
            CORE,
            """
            PersistentVolume [v1 PersistentVolume]: PersistentVolume is a storage resource
                                                    provisioned by an administrator or a
                                                    provisioner.
                spec    PersistentVolumeSpec
                status  object
            """,
        ),
        "PersistentVolumeSpec": struct(
            CORE,
            "PersistentVolumeSpec is the specification of a persistent volume.",
            capacity=("map[quantity]", "The volume's capacity (storage)."),
            accessModes=("[]string", "The ways the volume can be mounted."),
            claimRef=("object", "The claim bound to this volume."),
            persistentVolumeReclaimPolicy=("string", "Retain, Delete or Recycle."),
            storageClassName=("string", "The StorageClass this volume belongs to."),
            mountOptions=("[]string", "Mount options, e.g. ro, soft."),
            volumeMode=("string", "Filesystem or Block."),
            nodeAffinity=("object", "The nodes this volume can be accessed from."),
            volumeAttributesClassName=(
                "string",
                "The VolumeAttributesClass this volume belongs to.",
            ),
            **{source: ("object", f"A {source} volume source.") for source in _PV_SOURCES},
        ),
    },
    defaults=defaults,
    validate=validate,
    admit=admit,
    printer=Printer(
        columns(
            (
                "NAME",
                "CAPACITY",
                "ACCESS MODES",
                "RECLAIM POLICY",
                "STATUS",
                "CLAIM",
                "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS",
                "REASON",
                "AGE",
            ),
            ("VOLUMEMODE",),
        ),
        row,
    ),
)
