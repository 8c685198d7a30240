"""compute_pod_actions: what must change to bring a pod to its spec.

A pure function over the pod (Kubernetes JSON) and the runtime's view of it
(sandboxes and containers as CRI reports them), in the shape of the kubelet's
computePodActions: recreate the sandbox when it is gone or not ready, run
init containers one at a time in order, then start or restart app containers
per restartPolicy, kill containers whose spec changed, that failed liveness,
or that the spec no longer names. It never calls CRI and never looks at the
clock: crash-loop backoff is applied by the caller that carries out the plan.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

ContainerStateName = Literal["created", "running", "exited", "unknown"]

# Fields of a container spec whose change means "restart the container".
_HASHED_FIELDS = (
    "name",
    "image",
    "command",
    "args",
    "workingDir",
    "env",
    "envFrom",
    "ports",
    "volumeMounts",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
)


def container_hash(container: dict[str, Any]) -> str:
    """A stable hash of the parts of a container spec that need a restart
    when they change (resources are updated in place, probes need nothing)."""
    picked = {k: container[k] for k in _HASHED_FIELDS if k in container}
    raw = json.dumps(picked, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(raw).hexdigest()[:16]


@dataclass(frozen=True)
class SandboxState:
    id: str
    ready: bool
    attempt: int


@dataclass(frozen=True)
class ContainerState:
    id: str
    name: str
    state: ContainerStateName
    attempt: int = 0
    exit_code: int = 0
    hash: str = ""


@dataclass(frozen=True)
class PodRuntimeState:
    """Newest first: `sandboxes[0]` is the current one; for each name the
    first container listed is its latest attempt."""

    sandboxes: tuple[SandboxState, ...] = ()
    containers: tuple[ContainerState, ...] = ()

    def latest(self) -> dict[str, ContainerState]:
        out: dict[str, ContainerState] = {}
        for c in self.containers:
            out.setdefault(c.name, c)
        return out


@dataclass
class PodActions:
    kill_pod: bool = False
    create_sandbox: bool = False
    sandbox_id: str = ""
    attempt: int = 0
    next_init_container: str | None = None
    # The pod has failed for good: an init container failed under Never.
    init_failed: bool = False
    containers_to_start: list[str] = field(default_factory=list)
    # container id -> why it is being killed (shown in events and status)
    containers_to_kill: dict[str, str] = field(default_factory=dict)


def _should_restart(policy: str, exit_code: int) -> bool:
    if policy == "Always":
        return True
    if policy == "OnFailure":
        return exit_code != 0
    return False


def compute_pod_actions(
    pod: dict[str, Any],
    state: PodRuntimeState,
    liveness_failed: frozenset[str] = frozenset(),
) -> PodActions:
    spec = pod.get("spec") or {}
    policy = spec.get("restartPolicy") or "Always"
    init_specs: list[dict[str, Any]] = spec.get("initContainers") or []
    app_specs: list[dict[str, Any]] = spec.get("containers") or []
    latest = state.latest()
    sandbox = state.sandboxes[0] if state.sandboxes else None
    actions = PodActions()

    if sandbox is None or not sandbox.ready:
        return _recreate(actions, sandbox, policy, init_specs, app_specs, latest)

    actions.sandbox_id = sandbox.id
    actions.attempt = sandbox.attempt

    # Init containers: one at a time, in order; each must exit 0.
    for c in init_specs:
        st = latest.get(c["name"])
        if st is None or st.state in ("created", "unknown"):
            actions.next_init_container = c["name"]
            if st is not None:
                actions.containers_to_kill[st.id] = "init container was never started"
            return actions
        if st.state == "running":
            return actions
        if st.exit_code == 0:
            continue
        if policy == "Never":
            actions.init_failed = True
            actions.kill_pod = True
            return actions
        actions.next_init_container = c["name"]
        return actions

    keep = 0
    wanted = {c["name"] for c in app_specs}
    for c in app_specs:
        name = c["name"]
        st = latest.get(name)
        if st is None:
            actions.containers_to_start.append(name)
            continue
        if st.state == "running":
            if st.hash and st.hash != container_hash(c):
                actions.containers_to_kill[st.id] = f"container {name} definition changed"
                actions.containers_to_start.append(name)
            elif name in liveness_failed:
                actions.containers_to_kill[st.id] = f"container {name} failed liveness probe"
                if policy != "Never":
                    actions.containers_to_start.append(name)
            else:
                keep += 1
            continue
        if st.state in ("created", "unknown"):
            actions.containers_to_kill[st.id] = f"container {name} was never started"
            actions.containers_to_start.append(name)
            continue
        if _should_restart(policy, st.exit_code):
            actions.containers_to_start.append(name)

    init_names = {c["name"] for c in init_specs}
    for name, st in latest.items():
        if st.state == "running" and name not in wanted and name not in init_names:
            actions.containers_to_kill[st.id] = f"container {name} is not in the pod spec"

    if keep == 0 and not actions.containers_to_start:
        # Everything has finished and nothing restarts: release the sandbox.
        actions.kill_pod = True
    return actions


def _recreate(
    actions: PodActions,
    sandbox: SandboxState | None,
    policy: str,
    init_specs: list[dict[str, Any]],
    app_specs: list[dict[str, Any]],
    latest: dict[str, ContainerState],
) -> PodActions:
    actions.kill_pod = sandbox is not None or bool(latest)
    app_ran = [latest[c["name"]] for c in app_specs if c["name"] in latest]
    if sandbox is not None and app_ran:
        # A pod whose containers have finished for good is not restarted.
        if policy == "Never":
            return actions
        if (
            policy == "OnFailure"
            and len(app_ran) == len(app_specs)
            and all(c.state == "exited" and c.exit_code == 0 for c in app_ran)
        ):
            return actions
    actions.create_sandbox = True
    actions.attempt = 0 if sandbox is None else sandbox.attempt + 1
    if init_specs:
        actions.next_init_container = init_specs[0]["name"]
        return actions
    for c in app_specs:
        st = latest.get(c["name"])
        if st is not None and st.state == "exited" and not _should_restart(policy, st.exit_code):
            continue
        actions.containers_to_start.append(c["name"])
    return actions
