"""CSIStorageCapacity (storage.k8s.io/v1, namespaced): the capacity a CSI
driver reports for a storage class in a topology segment, which the
scheduler weighs for WaitForFirstConsumer volumes.

Validation as Kubernetes' ValidateCSIStorageCapacity: storageClassName a
DNS subdomain, nodeTopology a valid label selector, capacity and
maximumVolumeSize non-negative quantities. Columns: NAME STORAGECLASSNAME
CAPACITY AGE.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import DNS_SUBDOMAIN_MESSAGE, Errors, quantity, selector
from controlplane.api.display import age, name
from controlplane.api.dnsnames import is_dns_subdomain
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.storage._csi import STORAGE
from controlplane.api.schema import declare

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    klass = obj.get("storageClassName")
    if not isinstance(klass, str) or not klass:
        e.required("storageClassName")
    elif not is_dns_subdomain(klass):
        e.invalid("storageClassName", klass, DNS_SUBDOMAIN_MESSAGE)
    selector(e, "nodeTopology", obj.get("nodeTopology"), required=False)
    for field in ("capacity", "maximumVolumeSize"):
        if obj.get(field) is not None:
            quantity(e, field, obj[field])


def row(obj: Object, now: float, wide: bool) -> list[str]:
    capacity = obj.get("capacity")
    return [name(obj), str(obj.get("storageClassName") or ""),
            str(capacity) if capacity is not None else "<unset>", age(obj, now)]  # fmt: skip


DEFINITION = KindDef(
    KindInfo("CSIStorageCapacity", "storage.k8s.io/v1", has_status=False),
    types={
        **declare(
            STORAGE,
            """
            CSIStorageCapacity [storage.k8s.io/v1 CSIStorageCapacity]: CSIStorageCapacity stores the
                    result of one CSI GetCapacity call.
                nodeTopology       object    nodeTopology defines which nodes have access to the
                                             storage for which capacity was reported.
                storageClassName!  string    storageClassName represents the name of the
                                             StorageClass that the reported capacity applies to.
                capacity           quantity  capacity is the value reported by the CSI driver in its
                                             GetCapacityResponse for a GetCapacityRequest with
                                             topology and parameters that match the previous fields.
                maximumVolumeSize  quantity  maximumVolumeSize is the value reported by the CSI
                                             driver in its GetCapacityResponse for a
                                             GetCapacityRequest with topology and parameters that
                                             match the previous fields.
            """,
        ),
    },
    validate=validate,
    printer=Printer(columns(("NAME", "STORAGECLASSNAME", "CAPACITY", "AGE")), row),
)
