"""The small value types every part of the scheduler shares.

`Status` is what plugins return instead of raising: a code and the reasons,
so "why was this node rejected" is data. `ClusterEvent` names the changes that
can make an unschedulable pod schedulable. `CycleState` carries what a plugin's
PreFilter/PreScore computed to its later extension points within one
scheduling cycle. `Clock` is the injected time source: the client library's
one clock interface (machinery/clock.py); the scheduler measures
durations and deadlines with its `monotonic()` and stamps objects with its
`utcnow()`. Nothing here imports the rest of the scheduler.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from machinery.clock import Clock, RealClock

__all__ = ["Clock", "RealClock"]


class Code(enum.IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    # Preemption cannot help: the node is rejected whatever pods are removed.
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5


@dataclass(frozen=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def ok(self) -> bool:
        return self.code in (Code.SUCCESS, Code.SKIP)

    @property
    def rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        return Status(self.code, self.reasons, plugin)


SUCCESS = Status()
SKIP = Status(Code.SKIP)


def relevant(applies: object) -> Status:
    """A PreFilter/PreScore answer: SUCCESS when `applies` is truthy (the plugin has
    work for the pod), else SKIP."""
    return SUCCESS if applies else SKIP


def unschedulable(*reasons: str, unresolvable: bool = False) -> Status:
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
    return Status(code, tuple(reasons))


def error(*reasons: str) -> Status:
    return Status(Code.ERROR, tuple(reasons))


class Resource(enum.Enum):
    POD = "Pod"
    NODE = "Node"
    POD_GROUP = "PodGroup"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    PERSISTENT_VOLUME = "PersistentVolume"
    STORAGE_CLASS = "StorageClass"
    WILDCARD = "*"


class Action(enum.Flag):
    ADD = enum.auto()
    DELETE = enum.auto()
    UPDATE = enum.auto()
    ALL = ADD | DELETE | UPDATE


@dataclass(frozen=True)
class ClusterEvent:
    resource: Resource
    action: Action

    def matches(self, other: ClusterEvent) -> bool:
        """Whether this registered interest covers the event `other`."""
        if self.resource is not Resource.WILDCARD and self.resource is not other.resource:
            return False
        return bool(self.action & other.action)


NODE_ADD = ClusterEvent(Resource.NODE, Action.ADD)
NODE_UPDATE = ClusterEvent(Resource.NODE, Action.UPDATE)
NODE_DELETE = ClusterEvent(Resource.NODE, Action.DELETE)
POD_ADD = ClusterEvent(Resource.POD, Action.ADD)
POD_UPDATE = ClusterEvent(Resource.POD, Action.UPDATE)
POD_DELETE = ClusterEvent(Resource.POD, Action.DELETE)
POD_GROUP_CHANGE = ClusterEvent(Resource.POD_GROUP, Action.ALL)
ANY_EVENT = ClusterEvent(Resource.WILDCARD, Action.ALL)


@dataclass
class CycleState:
    """Per-cycle scratch space keyed by plugin name; also notes skipped plugins."""

    data: dict[str, Any] = field(default_factory=dict)
    skip_filter: set[str] = field(default_factory=set)
    skip_score: set[str] = field(default_factory=set)

    def keep(self, key: str, value: object) -> Status:
        """A PreFilter/PreScore's last step: SKIP when `value` is empty (nothing
        left for the later points), else keep it under `key` and SUCCESS."""
        if not value:
            return SKIP
        self.data[key] = value
        return SUCCESS
