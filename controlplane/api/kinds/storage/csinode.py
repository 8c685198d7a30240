"""CSINode (storage.k8s.io/v1, cluster-scoped, named after its Node): the
CSI drivers installed on a node, each with the node's ID in that driver,
its topology keys and how many volumes it may attach (allocatable.count).

Validation as Kubernetes' ValidateCSINode: each driver's name a CSI driver
name and unique, nodeID required and at most 192 characters, topologyKeys
qualified names without duplicates, allocatable.count non-negative.
Columns: NAME DRIVERS AGE.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import (
    QUALIFIED_NAME_MESSAGE,
    Errors,
    each_object,
    integer,
    is_qualified_name,
)
from controlplane.api.checks import mapping as is_mapping
from controlplane.api.display import age, name
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.fill import listed
from controlplane.api.kinds.storage._csi import STORAGE, driver_name
from controlplane.api.schema import declare

Object = dict[str, Any]

NODE_ID_MAX = 192


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    spec: Any = obj.get("spec")
    if not is_mapping(e, "spec", spec, required=True):
        return
    seen: set[str] = set()
    for path, driver in each_object(e, "spec.drivers", listed(spec.get("drivers")), required=True):
        driver_name(e, f"{path}.name", driver.get("name"))
        if driver.get("name") in seen:
            e.duplicate(f"{path}.name", driver.get("name"))
        seen.add(str(driver.get("name")))
        node_id = driver.get("nodeID")
        if not isinstance(node_id, str) or not node_id:
            e.required(f"{path}.nodeID")
        elif len(node_id) > NODE_ID_MAX:
            e.invalid(f"{path}.nodeID", node_id,
                      f"must be {NODE_ID_MAX} characters or less")  # fmt: skip
        keys: set[str] = set()
        for j, key in enumerate(listed(driver.get("topologyKeys"))):
            if not isinstance(key, str) or not key:
                e.required(f"{path}.topologyKeys[{j}]")
                continue
            if not is_qualified_name(key):
                e.invalid(f"{path}.topologyKeys[{j}]", key, QUALIFIED_NAME_MESSAGE)
            if key in keys:
                e.duplicate(f"{path}.topologyKeys[{j}]", key)
            keys.add(key)
        allocatable = driver.get("allocatable")
        if is_mapping(e, f"{path}.allocatable", allocatable):
            integer(e, f"{path}.allocatable.count", allocatable.get("count"), 0)


def row(obj: Object, now: float, wide: bool) -> list[str]:
    drivers = listed((obj.get("spec") or {}).get("drivers"))
    return [name(obj), str(len(drivers)), age(obj, now)]


DEFINITION = KindDef(
    KindInfo("CSINode", "storage.k8s.io/v1", namespaced=False, has_status=False),
    types={
        **declare(
            STORAGE,
            """
            CSINode [storage.k8s.io/v1 CSINode]: CSINode holds information about all CSI drivers
                                                 installed on a node.
                spec!  CSINodeSpec
            CSINodeSpec: CSINodeSpec holds information about the specification of all CSI drivers
                         installed on a node
                drivers!  []CSINodeDriver  drivers is a list of information of all CSI Drivers
                                           existing on a node.
            CSINodeDriver: CSINodeDriver holds information about the specification of one CSI driver
                           installed on a node
                name!         string    name represents the name of the CSI driver that this object
                                        refers to.
                nodeID!       string    nodeID of the node from the driver point of view.
                topologyKeys  []string  topologyKeys is the list of keys supported by the driver.
                allocatable   object    allocatable represents the volume resources of a node that
                                        are available for scheduling.
            """,
        ),
    },
    validate=validate,
    printer=Printer(columns(("NAME", "DRIVERS", "AGE")), row),
)
