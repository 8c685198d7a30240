"""Endpoints (v1): the addresses and ports behind a Service.

Validation: addresses are IP addresses, ports 1-65535. Defaults: port
protocol TCP. Columns: NAME ENDPOINTS AGE (three shown, then "+ N more...").
"""

from __future__ import annotations

import ipaddress
from typing import Any

from controlplane.api.checks import Errors, integer, items, mapping
from controlplane.api.display import NONE, age, name
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.fill import listed
from controlplane.api.kinds.shared.patch_facts import facts
from controlplane.api.schema import CORE, declare

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    subsets: Any = obj.get("subsets")
    if not items(e, "subsets", subsets):
        return
    for i, subset in enumerate(subsets):
        if not mapping(e, f"subsets[{i}]", subset, required=True):
            continue
        for field in ("addresses", "notReadyAddresses"):
            for j, addr in enumerate(subset.get(field) or []):
                ip: Any = addr.get("ip") if isinstance(addr, dict) else None
                try:
                    ipaddress.ip_address(str(ip))
                except ValueError:
                    e.add(f"subsets[{i}].{field}[{j}].ip", f"{ip!r} is not a valid IP address")
        for j, port in enumerate(subset.get("ports") or []):
            if isinstance(port, dict):
                integer(e, f"subsets[{i}].ports[{j}].port", port.get("port"), 1, 65535)


def defaults(obj: Object) -> None:
    for subset in listed(obj.get("subsets")):
        if isinstance(subset, dict):
            for port in listed(subset.get("ports")):
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")


def row(obj: Object, now: float, wide: bool) -> list[str]:
    eps = []
    for subset in obj.get("subsets") or []:
        ports = [p.get("port") for p in subset.get("ports") or []] or [None]
        for addr in subset.get("addresses") or []:
            for port in ports:
                eps.append(f"{addr.get('ip')}:{port}" if port is not None else str(addr.get("ip")))
    shown = ",".join(eps[:3]) + (f" + {len(eps) - 3} more..." if len(eps) > 3 else "")
    return [name(obj), shown or NONE, age(obj, now)]


DEFINITION = KindDef(
    KindInfo("Endpoints", "v1", short_names=("ep",), has_status=False),
    types={
        **declare(
            CORE,
            """
            Endpoints [v1 Endpoints]: Endpoints is a collection of endpoints that implement the
                                      actual service.
                subsets  []object  The sets of addresses and ports that comprise a service.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
    printer=Printer(columns(("NAME", "ENDPOINTS", "AGE")), row),
    patch_meta=facts(),
)
