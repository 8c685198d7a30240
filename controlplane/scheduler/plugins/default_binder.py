"""DefaultBinder: bind through the handle's binder (spec.nodeName / Binding)."""

from __future__ import annotations

from typing import Any

from controlplane.scheduler import names
from controlplane.scheduler.handle import Handle
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import CycleState, Status

NAME = names.DEFAULT_BINDER


class DefaultBinder:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        return self.handle.bind(pod, node)


def new(args: dict[str, Any], handle: Handle) -> DefaultBinder:
    return DefaultBinder(handle)
