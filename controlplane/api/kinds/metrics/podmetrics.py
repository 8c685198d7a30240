"""PodMetrics (metrics.k8s.io/v1beta1, namespaced, read only): a pod's usage.

Computed on each read from the agents' stats (apiserver/metricsapi/), as
metrics-server serves them: timestamp, window and each container's usage
{cpu, memory}. get and list only; `kubectl top pods` and the HPA read it.
Columns: NAME CPU MEMORY WINDOW (the containers' sum).
"""

from __future__ import annotations

from typing import Any

from controlplane.api.display import name
from controlplane.api.kinds.definition import Column, KindDef, Printer
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.metrics._usage import (
    API_VERSION,
    CONTAINER,
    GROUP,
    PACKAGE,
    cpu_millis,
    memory_mib,
)
from controlplane.api.quantity import parse_quantity
from controlplane.api.schema import kind


def _total(obj: dict[str, Any]) -> dict[str, str]:
    cpu = memory = 0.0
    for c in obj.get("containers") or []:
        usage = (c or {}).get("usage") or {}
        try:
            cpu += float(parse_quantity(str(usage.get("cpu", "0"))))
            memory += float(parse_quantity(str(usage.get("memory", "0"))))
        except ValueError:
            continue
    return {"cpu": str(cpu), "memory": str(int(memory))}


def row(obj: dict[str, Any], now: float, wide: bool) -> list[str]:
    total = _total(obj)
    return [name(obj), cpu_millis(total), memory_mib(total), str(obj.get("window", ""))]


DEFINITION = KindDef(
    KindInfo(
        "PodMetrics",
        API_VERSION,
        "pods",
        "podmetrics",
        (),
        has_status=False,
        read_only=True,
        qualified=True,
    ),
    types={
        "PodMetrics": kind(
            PACKAGE,
            "PodMetrics sets resource usage metrics of a pod.",
            (GROUP, "v1beta1", "PodMetrics"),
            timestamp=("string", "The time the usage was measured (the end of the window)."),
            window=("string", "The interval the usage was measured over."),
            containers=("[]ContainerMetrics", "Metrics for all containers, collected together."),
        ),
        "ContainerMetrics": CONTAINER,
    },
    printer=Printer((Column("NAME"), Column("CPU"), Column("MEMORY"), Column("WINDOW")), row),
)
