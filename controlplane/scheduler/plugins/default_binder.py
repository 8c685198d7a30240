"""DefaultBinder: bind through the scheduler's ClusterWriter (spec.nodeName / Binding)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import CycleState, Status, error

if TYPE_CHECKING:
    from controlplane.scheduler.scheduler import Scheduler

NAME = "DefaultBinder"


class DefaultBinder:
    name = NAME

    def __init__(self) -> None:
        self.scheduler: Scheduler | None = None

    def attach(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

    def bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        if self.scheduler is None:
            return error("DefaultBinder is not attached to a scheduler")
        return self.scheduler.bind_with_writer(pod, node)


def new(args: dict[str, Any]) -> DefaultBinder:
    return DefaultBinder()
