"""CSIDriver (storage.k8s.io/v1, cluster-scoped): how Kubernetes treats the
volumes of one CSI driver (attach, pod info on mount, fsGroup, ephemeral
volumes, storage capacity, service account tokens).

As Kubernetes: defaults attachRequired true, podInfoOnMount false,
storageCapacity false, fsGroupPolicy ReadWriteOnceWithFSType,
volumeLifecycleModes [Persistent], requiresRepublish false, seLinuxMount
false. Validation: fsGroupPolicy and volumeLifecycleModes from their sets,
tokenRequests' audiences unique and expirationSeconds at least 600 (10
minutes) and below 2^32; attachRequired and volumeLifecycleModes are
immutable.
Columns: NAME ATTACHREQUIRED PODINFOONMOUNT STORAGECAPACITY TOKENREQUESTS
REQUIRESREPUBLISH MODES AGE.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors, each_object, integer, mapping
from controlplane.api.display import age, name
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.fill import listed
from controlplane.api.kinds.storage._csi import STORAGE
from controlplane.api.schema import declare

Object = dict[str, Any]

FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
MODES = ("Ephemeral", "Persistent")


def defaults(obj: Object) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("attachRequired", True)
    spec.setdefault("podInfoOnMount", False)
    spec.setdefault("storageCapacity", False)
    spec.setdefault("fsGroupPolicy", "ReadWriteOnceWithFSType")
    spec.setdefault("volumeLifecycleModes", ["Persistent"])
    spec.setdefault("requiresRepublish", False)
    spec.setdefault("seLinuxMount", False)


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    spec: Any = obj.get("spec")
    if not mapping(e, "spec", spec, required=True):
        return
    for field in ("attachRequired", "podInfoOnMount", "storageCapacity", "requiresRepublish",
                  "seLinuxMount"):  # fmt: skip
        value = spec.get(field)
        if field == "attachRequired" and value is None:
            e.required("spec.attachRequired")
        elif value is not None and not isinstance(value, bool):
            e.invalid(f"spec.{field}", value, "must be a boolean")
    policy = spec.get("fsGroupPolicy")
    if policy is not None and policy not in FS_GROUP_POLICIES:
        e.not_supported("spec.fsGroupPolicy", policy, FS_GROUP_POLICIES)
    for i, mode in enumerate(listed(spec.get("volumeLifecycleModes"))):
        if mode not in MODES:
            e.not_supported(f"spec.volumeLifecycleModes[{i}]", mode, MODES)
    audiences: set[str] = set()
    for path, request in each_object(
        e, "spec.tokenRequests", listed(spec.get("tokenRequests")), required=True
    ):
        audience = str(request.get("audience") or "")
        if audience in audiences:
            e.duplicate(f"{path}.audience", audience)
        audiences.add(audience)
        seconds = request.get("expirationSeconds")
        if integer(e, f"{path}.expirationSeconds", seconds) and seconds < 600:
            e.invalid(f"{path}.expirationSeconds", seconds,
                      "may not specify a duration less than 10 minutes")  # fmt: skip
        elif isinstance(seconds, int) and seconds >= 1 << 32:
            e.invalid(f"{path}.expirationSeconds", seconds,
                      "may not specify a duration larger than 2^32 seconds")  # fmt: skip
    if old is not None:
        for field in ("attachRequired", "volumeLifecycleModes"):
            if (old.get("spec") or {}).get(field) != spec.get(field):
                e.invalid(f"spec.{field}", spec.get(field), "field is immutable")


def _flag(value: Any) -> str:
    return "true" if value is True else "false"


def row(obj: Object, now: float, wide: bool) -> list[str]:
    spec = obj.get("spec") or {}
    audiences = [str(r.get("audience") or "") for r in listed(spec.get("tokenRequests"))
                 if isinstance(r, dict)]  # fmt: skip
    modes = ",".join(str(m) for m in listed(spec.get("volumeLifecycleModes")))
    return [
        name(obj),
        _flag(spec.get("attachRequired")),
        _flag(spec.get("podInfoOnMount")),
        _flag(spec.get("storageCapacity")),
        ",".join(audiences) or "<unset>",
        _flag(spec.get("requiresRepublish")),
        modes or "<none>",
        age(obj, now),
    ]


DEFINITION = KindDef(
    KindInfo("CSIDriver", "storage.k8s.io/v1", namespaced=False, has_status=False),
    types={
        **declare(
            STORAGE,
            """
            CSIDriver [storage.k8s.io/v1 CSIDriver]: CSIDriver captures information about a
                    Container Storage Interface (CSI) volume driver deployed on the cluster.
                spec!  CSIDriverSpec
            CSIDriverSpec: CSIDriverSpec is the specification of a CSIDriver.
                attachRequired        boolean   attachRequired indicates this CSI volume driver
                                                requires an attach operation.
                podInfoOnMount        boolean   podInfoOnMount indicates this CSI volume driver
                                                requires additional pod information during mount
                                                operations.
                volumeLifecycleModes  []string  volumeLifecycleModes defines what kind of volumes
                                                this CSI volume driver supports.
                storageCapacity       boolean   storageCapacity indicates that the CSI volume driver
                                                wants pod scheduling to consider the storage
                                                capacity that the driver deployment will report.
                fsGroupPolicy         string    fsGroupPolicy defines if the underlying volume
                                                supports changing ownership and permission of the
                                                volume before being mounted.
                tokenRequests         []object  tokenRequests indicates the CSI driver needs pods'
                                                service account tokens it is mounting volume for to
                                                do necessary authentication.
                requiresRepublish     boolean   requiresRepublish indicates the CSI driver wants
                                                NodePublishVolume being periodically called to
                                                reflect any possible change in the mounted volume.
                seLinuxMount          boolean   seLinuxMount specifies if the CSI driver supports
                                                "-o context" mount option.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
    printer=Printer(
        columns(
            (
                "NAME",
                "ATTACHREQUIRED",
                "PODINFOONMOUNT",
                "STORAGECAPACITY",
                "TOKENREQUESTS",
                "REQUIRESREPUBLISH",
                "MODES",
                "AGE",
            )
        ),
        row,
    ),
)
