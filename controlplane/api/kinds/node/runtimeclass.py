"""RuntimeClass (node.k8s.io/v1, cluster-scoped): a container runtime
configuration pods choose by name (spec.runtimeClassName).

As Kubernetes has it: no status, no short name. Validation
(ValidateRuntimeClass): handler required, a DNS-1123 label, immutable;
overhead.podFixed non-negative quantities; scheduling.nodeSelector labels
and tolerations valid. The RuntimeClass admission
(controlplane/apiserver/runtimeclass_admission.py) adds a class's overhead
and scheduling to the pods that name it and refuses an unknown class; the
agent passes the handler to the runtime. Columns: NAME HANDLER AGE.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import DNS_LABEL_MESSAGE, Errors, label_map, mapping, quantity
from controlplane.api.display import age, name
from controlplane.api.dnsnames import is_dns_label
from controlplane.api.kinds.definition import Column, KindDef, Printer
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared import podspec
from controlplane.api.kinds.shared.patch_facts import facts
from controlplane.api.schema import declare

Object = dict[str, Any]

NODE = "io.k8s.api.node.v1"


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    handler = obj.get("handler")
    if not isinstance(handler, str) or not handler:
        e.add("handler", "Required value")
    elif not is_dns_label(handler):
        e.add("handler", f'Invalid value: "{handler}": {DNS_LABEL_MESSAGE}')
    if old is not None and old.get("handler") != handler:
        e.add("handler", f'Invalid value: "{handler}": field is immutable')
    overhead: Any = obj.get("overhead")
    if mapping(e, "overhead", overhead) and mapping(e, "overhead.podFixed",
                                                     overhead.get("podFixed")):  # fmt: skip
        for resource, value in overhead["podFixed"].items():
            quantity(e, f"overhead.podFixed[{resource}]", value)
    scheduling: Any = obj.get("scheduling")
    if mapping(e, "scheduling", scheduling):
        label_map(e, "scheduling.nodeSelector", scheduling.get("nodeSelector"))
        # The tolerations' rules are the pod spec's.
        podspec.validate(e, "scheduling", {"containers": [{"name": "x", "image": "x"}],
                                           "tolerations": scheduling.get("tolerations")})  # fmt: skip


def row(obj: Object, now: float, wide: bool) -> list[str]:
    return [name(obj), str(obj.get("handler") or ""), age(obj, now)]


DEFINITION = KindDef(
    KindInfo("RuntimeClass", "node.k8s.io/v1", namespaced=False, has_status=False),
    types={
        **declare(
            NODE,
            """
            RuntimeClass [node.k8s.io/v1 RuntimeClass]: RuntimeClass defines a class of container
                    runtime supported in the cluster.
                handler!    string      handler specifies the underlying runtime and configuration
                                        that the CRI implementation will use to handle pods of this
                                        class.
                overhead    Overhead    overhead represents the resource overhead associated with
                                        running a pod for a given RuntimeClass.
                scheduling  Scheduling  scheduling holds the scheduling constraints to ensure that
                                        pods running with this RuntimeClass are scheduled to nodes
                                        that support it.
            Overhead: Overhead structure represents the resource overhead associated with running a
                      pod.
                podFixed  map[quantity]  podFixed represents the fixed resource overhead associated
                                         with running a pod.
            Scheduling: Scheduling specifies the scheduling constraints for nodes supporting a
                        RuntimeClass.
                nodeSelector  map       nodeSelector lists labels that must be present on nodes that
                                        support this RuntimeClass.
                tolerations   []object  tolerations are appended (excluding duplicates) to pods
                                        running with this RuntimeClass during admission.
            """,
        ),
    },
    validate=validate,
    name_rule="subdomain",
    printer=Printer(
        (Column("NAME"), Column("HANDLER", description="The handler."), Column("AGE")), row
    ),
    patch_meta=facts(),
)
