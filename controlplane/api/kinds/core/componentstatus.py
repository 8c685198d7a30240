"""ComponentStatus (v1, cluster-scoped, deprecated since v1.19): the health
of the control plane's parts, as `kubectl get componentstatuses` (`cs`)
prints it. Never stored: each get or list computes it
(controlplane/apiserver/componentstatus.py); get and list are its only
verbs. Columns: NAME STATUS MESSAGE ERROR, as Kubernetes' printer (the
first condition of type Healthy: "Healthy" or "Unhealthy").
"""

from __future__ import annotations

from typing import Any

from controlplane.api.display import name
from controlplane.api.kinds.definition import Column, KindDef, Printer
from controlplane.api.kinds.info import KindInfo
from controlplane.api.schema import CORE, declare

Object = dict[str, Any]

DEPRECATION = "v1 ComponentStatus is deprecated in v1.19+"


def row(obj: Object, now: float, wide: bool) -> list[str]:
    status, message, error = "Unknown", "", ""
    for condition in obj.get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Healthy":
            status = "Healthy" if condition.get("status") == "True" else "Unhealthy"
            message = str(condition.get("message") or "")
            error = str(condition.get("error") or "")
            break
    return [name(obj), status, message, error]


DEFINITION = KindDef(
    KindInfo(
        "ComponentStatus",
        "v1",
        short_names=("cs",),
        namespaced=False,
        has_status=False,
        read_only=True,
    ),
    types={
        **declare(
            CORE,
            """
            ComponentStatus [v1 ComponentStatus]: ComponentStatus (and ComponentStatusList) holds
                                                  the cluster validation info. Deprecated: This API
                                                  is deprecated in v1.19+
                conditions  []ComponentCondition  List of component conditions observed
            ComponentCondition: Information about the condition of a component.
                type!    string  Type of condition for a component. Valid value: "Healthy"
                status!  string  Status of the condition for a component. Valid values for
                                 "Healthy": "True", "False", or "Unknown".
                message  string  Message about the condition for a component.
                error    string  Condition error code for a component.
            """,
        ),
    },
    printer=Printer(
        (
            Column("NAME"),
            Column("STATUS", description="Status of the component conditions"),
            Column("MESSAGE", description="Message of the component conditions"),
            Column("ERROR", description="Error of the component conditions"),
        ),
        row,
    ),
)
