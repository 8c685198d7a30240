"""PrioritySort: the queue order — higher priority first, then older first."""

from __future__ import annotations

from typing import Any

from controlplane.scheduler.podinfo import PodInfo

NAME = "PrioritySort"


class PrioritySort:
    name = NAME

    def sort_key(self, pod: PodInfo, added: float) -> tuple[Any, ...]:
        return (-pod.priority, pod.created or added)


def new(args: dict[str, object]) -> PrioritySort:
    return PrioritySort()
