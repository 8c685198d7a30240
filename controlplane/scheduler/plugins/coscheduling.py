"""Coscheduling: gang scheduling of a PodGroup, as Volcano and the coscheduling plugin do.

Pods join a group by the `scheduling.skiff.dev/pod-group` label (or Volcano's
`scheduling.k8s.io/group-name` annotation); the PodGroup object
(scheduling.skiff.dev/v1alpha1) gives `spec.minMember` and optionally
`spec.scheduleTimeoutSeconds`.

- PreFilter: a group with fewer than minMember pods in existence cannot
  start; its pods wait (unresolvable, so nothing is preempted for them).
- Permit: a member that found a node waits, holding its place (the cache
  counts it as assumed), until minMember members have places; then all of
  them are allowed to bind together.
- Unreserve / PostFilter: when one member times out or fails, every waiting
  sibling is released, so a partial gang never holds resources.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from controlplane.scheduler import names
from controlplane.scheduler.cache import Cache
from controlplane.scheduler.framework import Diagnosis
from controlplane.scheduler.handle import Handle
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import (
    POD_ADD,
    POD_DELETE,
    POD_GROUP_CHANGE,
    SKIP,
    SUCCESS,
    ClusterEvent,
    Code,
    CycleState,
    Status,
    unschedulable,
)

NAME = names.COSCHEDULING


class Coscheduling:
    name = NAME

    def __init__(self, handle: Handle, default_timeout: float = 60.0) -> None:
        self.handle = handle
        self.default_timeout = default_timeout
        self._releasing: set[str] = set()

    def _group(self, pod: PodInfo) -> dict[str, Any] | None:
        return self.handle.pod_group(pod.pod_group)

    def _min_member(self, group: dict[str, Any]) -> int:
        return int((group.get("spec") or {}).get("minMember", 1))

    def pre_filter(self, state: CycleState, pod: PodInfo, cache: Cache) -> Status:
        if not pod.pod_group:
            return SKIP
        group = self._group(pod)
        name = pod.pod_group.split("/", 1)[1]
        if group is None:
            return unschedulable(f'pod group "{name}" not found', unresolvable=True)
        members = len(self.handle.group_members(pod.pod_group))
        need = self._min_member(group)
        if members < need:
            return unschedulable(
                f'pod group "{name}" has {members} pods, fewer than minMember {need}',
                unresolvable=True,
            )
        return SUCCESS

    def _placed(self, pod: PodInfo) -> int:
        cache = self.handle.cache
        return sum(
            1 for k in self.handle.group_members(pod.pod_group) if cache.node_of(k) is not None
        )

    def permit(self, state: CycleState, pod: PodInfo, node: str) -> tuple[Status, float]:
        if not pod.pod_group:
            return SUCCESS, 0.0
        group = self._group(pod)
        if group is None:
            return unschedulable("pod group gone"), 0.0
        if self._placed(pod) >= self._min_member(group):
            for key in list(self.handle.group_members(pod.pod_group)):
                if key != pod.key and self.handle.is_waiting(key):
                    self.handle.allow(key)
            return SUCCESS, 0.0
        # Pull the siblings forward so the gang is tried together.
        self.handle.activate(k for k in self.handle.group_members(pod.pod_group) if k != pod.key)
        timeout = float(
            (group.get("spec") or {}).get("scheduleTimeoutSeconds") or self.default_timeout
        )
        return Status(Code.WAIT), timeout

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        if pod.pod_group:
            self._release(
                pod, f'pod group "{pod.pod_group}" released: member {pod.name} was rejected'
            )

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[Status, str]:
        if pod.pod_group:
            self._release(
                pod, f'pod group "{pod.pod_group}" released: member {pod.name} is unschedulable'
            )
        return unschedulable(), ""

    def _release(self, pod: PodInfo, message: str) -> None:
        """Reject every waiting sibling (once; rejecting them calls back here)."""
        if pod.pod_group in self._releasing:
            return
        self._releasing.add(pod.pod_group)
        try:
            for key in list(self.handle.group_members(pod.pod_group)):
                if key != pod.key and self.handle.is_waiting(key):
                    self.handle.reject(key, message)
        finally:
            self._releasing.discard(pod.pod_group)

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return [POD_ADD, POD_DELETE, POD_GROUP_CHANGE]


def new(args: dict[str, Any], handle: Handle) -> Coscheduling:
    return Coscheduling(handle, float(args.get("permitWaitingTimeSeconds", 60)))
