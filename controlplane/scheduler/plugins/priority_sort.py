"""PrioritySort: the queue order — higher priority first, then older first."""

from __future__ import annotations

from typing import Any

from controlplane.scheduler import names
from controlplane.scheduler.handle import Handle
from controlplane.scheduler.podinfo import PodInfo

NAME = names.PRIORITY_SORT


class PrioritySort:
    name = NAME

    def sort_key(self, pod: PodInfo, added: float) -> tuple[Any, ...]:
        return (-pod.priority, pod.created or added)


def new(args: dict[str, object], handle: Handle) -> PrioritySort:
    return PrioritySort()
