"""What NodeMetrics and PodMetrics share: their schema types and table cells.

Columns as metrics-server's table: NAME CPU MEMORY WINDOW (cpu in
millicores, memory in MiB, as its printer shows them).
"""

from __future__ import annotations

from typing import Any

from controlplane.api.quantity import parse_quantity
from controlplane.api.schema import Type, struct

PACKAGE = "io.k8s.metrics.pkg.apis.metrics.v1beta1"
GROUP = "metrics.k8s.io"
API_VERSION = f"{GROUP}/v1beta1"

USAGE_FIELDS: dict[str, tuple[str, str]] = {
    "timestamp": ("string", "The time the usage was measured (the end of the window)."),
    "window": ("string", "The interval the usage was measured over."),
    "usage": ("map", "The memory (working set) and CPU (cores) usage."),
}

CONTAINER: Type = struct(
    PACKAGE,
    "ContainerMetrics sets resource usage metrics of a container.",
    ("name", "usage"),
    name=("string", "Container name corresponding to the one from pod.spec.containers."),
    usage=("map", "The memory (working set) and CPU (cores) usage."),
)


def cpu_millis(usage: dict[str, Any]) -> str:
    try:
        return f"{int(float(parse_quantity(str(usage.get('cpu', '0')))) * 1000)}m"
    except ValueError:
        return "<unknown>"


def memory_mib(usage: dict[str, Any]) -> str:
    try:
        return f"{int(float(parse_quantity(str(usage.get('memory', '0')))) / (1 << 20))}Mi"
    except ValueError:
        return "<unknown>"
