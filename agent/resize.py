"""In-place pod resize (InPlacePodVerticalScaling, beta in 1.33), the
kubelet's part: a running app container or native sidecar whose resources (as
allocated, agent/allocation.py) differ from those its cgroup has gets
them in place, through CRI UpdateContainerResources, when the resizePolicy
of every changed resource is NotRequired (the default); a container with
RestartContainer for a changed resource is restarted with them instead.
What the runtime refuses is reported (the PodResizeInProgress condition,
reason Error, with the runtime's message), never retried in a tight loop.

What a container's cgroup has is learnt once per container from
ContainerStatus.resources (so an agent restart misses no resize), then
kept as applied.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.cri_client import CRIClient, CRIError
from proto.runtime.v1 import api_pb2 as cri

_CPU = ("cpu_shares", "cpu_quota", "cpu_period")
_MEMORY = ("memory_limit_in_bytes",)


@dataclass
class ResizeOutcome:
    restart: list[str] = field(default_factory=list)  # container ids to restart
    errors: dict[str, str] = field(default_factory=dict)  # container name -> why not


def changed_resources(
    have: cri.LinuxContainerResources, want: cri.LinuxContainerResources
) -> set[str]:
    out = set()
    if any(getattr(have, f) != getattr(want, f) for f in _CPU):
        out.add("cpu")
    if any(getattr(have, f) != getattr(want, f) for f in _MEMORY):
        out.add("memory")
    return out


def needs_restart(spec: Mapping[str, Any], resources: set[str]) -> bool:
    policies = {
        p.get("resourceName"): p.get("restartPolicy")
        for p in spec.get("resizePolicy") or []
        if isinstance(p, dict)
    }
    return any(policies.get(r) == "RestartContainer" for r in resources)


class Resizer:
    def __init__(self, runtime: CRIClient) -> None:
        self.runtime = runtime
        self._applied: dict[str, cri.LinuxContainerResources] = {}
        # container id -> the spec resources its cgroup has (for its status)
        self._applied_spec: dict[str, dict[str, Any]] = {}

    def created(
        self,
        cid: str,
        resources: cri.LinuxContainerResources,
        spec_resources: Mapping[str, Any] | None = None,
    ) -> None:
        self._applied[cid] = resources
        if spec_resources is not None:
            self._applied_spec[cid] = copy.deepcopy(dict(spec_resources))

    def drop(self, cid: str) -> None:
        self._applied.pop(cid, None)
        self._applied_spec.pop(cid, None)

    def applied(self, cid: str) -> dict[str, Any] | None:
        """The spec resources the container runs with, when this agent set them."""
        found = self._applied_spec.get(cid)
        return copy.deepcopy(found) if found is not None else None

    def _have(self, cid: str) -> cri.LinuxContainerResources | None:
        if cid not in self._applied:
            try:
                st = self.runtime.container_status(cid)
            except CRIError:
                return None
            self._applied[cid] = st.resources.linux
        return self._applied[cid]

    def sync(
        self,
        running: Mapping[str, tuple[str, Mapping[str, Any]]],
        wanted: Mapping[str, cri.LinuxContainerResources],
    ) -> ResizeOutcome:
        """`running`: name -> (container id, spec) of running app containers;
        `wanted`: name -> the resources their spec asks for now."""
        out = ResizeOutcome()
        for name, (cid, spec) in running.items():
            have = self._have(cid)
            want = wanted[name]
            if have is None:
                continue
            changed = changed_resources(have, want)
            if not changed:
                continue
            if needs_restart(spec, changed):
                out.restart.append(cid)
                continue
            try:
                self.runtime.update_container_resources(cid, want)
            except CRIError as err:
                out.errors[name] = err.message
                continue
            self._applied[cid] = want
            self._applied_spec[cid] = copy.deepcopy(dict(spec.get("resources") or {}))
        return out
