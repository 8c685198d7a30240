"""The agent's view of the runtime: every pod's sandboxes and containers.

One relist is a ListPodSandbox plus a ListContainers, grouped by the pod UID
label the agent put on them, plus ContainerStatus for the details a list
does not carry (start and finish times, exit code, reason). The result feeds both
compute_pod_actions (what to do) and compute_pod_status (what to report).
Statuses are cached per container and asked again only when the listed
state differs from the cached one, so a steady node costs two list calls.
Objects without the pod UID label were not made by an agent and are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.cri_client import CRIClient, CRIError
from agent.pod_actions import ContainerState, PodRuntimeState, SandboxState
from agent.pod_config import HASH_ANNOTATION, POD_UID_LABEL
from agent.pod_status import ContainerInfo
from agent.termination_message import read_message
from proto.runtime.v1 import api_pb2 as cri

_STATE = {
    cri.CONTAINER_CREATED: "created",
    cri.CONTAINER_RUNNING: "running",
    cri.CONTAINER_EXITED: "exited",
    cri.CONTAINER_UNKNOWN: "unknown",
}
NS = 1e9


@dataclass
class PodRecord:
    uid: str
    sandboxes: list[cri.PodSandbox] = field(default_factory=list)
    containers: list[ContainerInfo] = field(default_factory=list)
    hashes: dict[str, str] = field(default_factory=dict)

    def current_sandbox(self) -> cri.PodSandbox | None:
        return self.sandboxes[0] if self.sandboxes else None

    def actions_state(self) -> PodRuntimeState:
        return PodRuntimeState(
            sandboxes=tuple(
                SandboxState(
                    id=s.id, ready=s.state == cri.SANDBOX_READY, attempt=s.metadata.attempt
                )
                for s in self.sandboxes
            ),
            containers=tuple(
                ContainerState(
                    id=c.id,
                    name=c.name,
                    state=c.state,  # type: ignore[arg-type]
                    attempt=c.attempt,
                    exit_code=c.exit_code,
                    hash=self.hashes.get(c.id, ""),
                )
                for c in self.containers
            ),
        )


class RuntimeView:
    def __init__(self, client: CRIClient) -> None:
        self._cri = client
        self._status: dict[str, cri.ContainerStatus] = {}

    def relist(self, uid: str | None = None) -> dict[str, PodRecord]:
        """Every pod's record, or only pod `uid`'s (filtered by label)."""
        pods: dict[str, PodRecord] = {}
        labels = {POD_UID_LABEL: uid} if uid else None
        sandboxes = self._cri.list_pod_sandboxes(labels)
        sandbox_uid: dict[str, str] = {}
        for s in sandboxes:
            owner = s.labels.get(POD_UID_LABEL) or s.metadata.uid
            if not owner:
                continue
            sandbox_uid[s.id] = owner
            pods.setdefault(owner, PodRecord(owner)).sandboxes.append(s)
        live: set[str] = set()
        if uid is None:
            containers = self._cri.list_containers()
        else:
            # By sandbox id, not by label: a runtime checks the sandbox id
            # before it looks at a container at all, but it may refresh
            # every container's state before matching labels, which made
            # each pod's sync cost O(pods on the node) in the runtime.
            containers = [
                c for s in sandboxes for c in self._cri.list_containers(labels, sandbox_id=s.id)
            ]
        for c in containers:
            owner = c.labels.get(POD_UID_LABEL) or sandbox_uid.get(c.pod_sandbox_id, "")
            if not owner:
                continue
            live.add(c.id)
            info = self._info(c)
            if info is None:
                continue
            rec = pods.setdefault(owner, PodRecord(owner))
            rec.containers.append(info)
            rec.hashes[c.id] = c.annotations.get(HASH_ANNOTATION, "")
        if uid is None:
            for gone in set(self._status) - live:
                del self._status[gone]
        for rec in pods.values():
            rec.sandboxes.sort(key=lambda s: (s.metadata.attempt, s.created_at), reverse=True)
            rec.containers.sort(key=lambda c: (c.attempt, c.created_at), reverse=True)
        return pods

    def _info(self, c: cri.Container) -> ContainerInfo | None:
        base = ContainerInfo(
            id=c.id,
            name=c.metadata.name,
            state=_STATE.get(c.state, "unknown"),
            attempt=c.metadata.attempt,
            created_at=c.created_at / NS,
            image=c.image.image,
            image_ref=c.image_ref,
        )
        if c.state == cri.CONTAINER_CREATED:
            return base
        status = self._status.get(c.id)
        if status is None or status.state != c.state:
            try:
                status = self._cri.container_status(c.id)
            except CRIError as err:
                if err.not_found:
                    return None
                raise
            if status.state == cri.CONTAINER_EXITED:
                # Read once: the termination message file or the log's tail.
                status.message = read_message(status)
            self._status[c.id] = status
        return ContainerInfo(
            id=c.id,
            name=base.name,
            state=_STATE.get(status.state, "unknown"),
            attempt=base.attempt,
            exit_code=status.exit_code,
            reason=status.reason,
            message=status.message,
            created_at=base.created_at,
            started_at=status.started_at / NS,
            finished_at=status.finished_at / NS,
            image=base.image,
            image_ref=status.image_ref or base.image_ref,
        )
