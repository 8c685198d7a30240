"""NodeMetrics (metrics.k8s.io/v1beta1, cluster-scoped, read only): a node's usage.

Computed on each read from the agents' stats (apiserver/metricsapi/), as
metrics-server serves them: timestamp, window, usage {cpu, memory}. get and
list only; `kubectl top nodes` reads it. Columns: NAME CPU MEMORY WINDOW.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.display import name
from controlplane.api.kinds.definition import Column, KindDef, Printer
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.metrics._usage import (
    API_VERSION,
    GROUP,
    PACKAGE,
    USAGE_FIELDS,
    cpu_millis,
    memory_mib,
)
from controlplane.api.schema import kind


def row(obj: dict[str, Any], now: float, wide: bool) -> list[str]:
    usage = obj.get("usage") or {}
    return [name(obj), cpu_millis(usage), memory_mib(usage), str(obj.get("window", ""))]


DEFINITION = KindDef(
    KindInfo(
        "NodeMetrics",
        API_VERSION,
        "nodes",
        "nodemetrics",
        (),
        namespaced=False,
        has_status=False,
        read_only=True,
        qualified=True,  # `nodes`/`pods` are the core kinds' plurals too
    ),
    types={
        "NodeMetrics": kind(
            PACKAGE,
            "NodeMetrics sets resource usage metrics of a node.",
            (GROUP, "v1beta1", "NodeMetrics"),
            **USAGE_FIELDS,
        ),
    },
    printer=Printer((Column("NAME"), Column("CPU"), Column("MEMORY"), Column("WINDOW")), row),
)
