"""What the batch scheduler writes in a Queue's status: its PodGroups per
phase and the resources its placed pods hold (Volcano's QueueStatus counts
and `allocated`, cpu in millicores)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PHASES = ("pending", "running", "inqueue", "completed", "unknown")


def queue_status(per_phase: Mapping[str, int], allocated: Mapping[str, int]) -> dict[str, Any]:
    """The status of a queue with `per_phase` PodGroups (phase -> count) holding `allocated`."""
    counts = {p: 0 for p in PHASES}
    counts.update((p, n) for p, n in per_phase.items() if n)
    status: dict[str, Any] = {**counts, "allocated": {d: str(v) for d, v in allocated.items()}}
    status["allocated"]["cpu"] = f"{allocated.get('cpu', 0)}m"
    return status


def idle_status() -> dict[str, Any]:
    """The status of a queue when no PodGroup and no pod exists."""
    return queue_status({}, {})
