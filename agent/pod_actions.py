"""compute_pod_actions: what must change to bring a pod to its spec.

A pure function over the pod (Kubernetes JSON) and the runtime's view of it
(sandboxes and containers as CRI reports them), in the shape of the kubelet's
computePodActions: recreate the sandbox when it is gone or not ready, run
init containers one at a time in order, then start or restart app containers
per restartPolicy (native sidecars, init containers with restartPolicy
Always, start in the init sequence and keep running beside the app
containers, restarted whatever the pod's restartPolicy), kill containers whose spec changed, that failed liveness,
or that the spec no longer names; start each ephemeral container (kubectl
debug) once. It never calls CRI and never looks at the
clock: crash-loop backoff is applied by the caller that carries out the plan.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
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


def container_hash(container: Mapping[str, Any]) -> str:
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
    # Init containers to start now, in spec order: the next one of the init
    # sequence, and native sidecars (restartPolicy Always) to restart.
    init_containers_to_start: list[str] = field(default_factory=list)
    # The pod has failed for good: an init container failed under Never.
    init_failed: bool = False
    containers_to_start: list[str] = field(default_factory=list)
    # Ephemeral containers (kubectl debug) that never ran: each runs once.
    ephemeral_to_start: list[str] = field(default_factory=list)
    # container id -> why it is being killed (shown in events and status)
    containers_to_kill: dict[str, str] = field(default_factory=dict)

    @property
    def next_init_container(self) -> str | None:
        return self.init_containers_to_start[0] if self.init_containers_to_start else None


def is_sidecar(container: Mapping[str, Any]) -> bool:
    """A native sidecar: an init container with restartPolicy Always."""
    return container.get("restartPolicy") == "Always"


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
    started: frozenset[str] | None = None,
) -> PodActions:
    """`liveness_failed`: running containers to restart (liveness, or a
    startup probe past its threshold); `started`: running containers whose
    startup probe has succeeded (None: every running one)."""
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
    # Ephemeral containers start even while the pod initializes, and are
    # never restarted.
    ephemeral = spec.get("ephemeralContainers") or []
    actions.ephemeral_to_start = [c["name"] for c in ephemeral if c["name"] not in latest]

    initialized = _init_actions(
        actions, init_specs, app_specs, latest, policy, liveness_failed, started
    )
    if actions.kill_pod or not initialized:
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

    init_names = {c["name"] for c in init_specs} | {c["name"] for c in ephemeral}
    for name, st in latest.items():
        if st.state == "running" and name not in wanted and name not in init_names:
            actions.containers_to_kill[st.id] = f"container {name} is not in the pod spec"

    if keep == 0 and not actions.containers_to_start:
        # Everything has finished and nothing restarts: release the sandbox,
        # sidecars too (they do not keep a finished pod alive: a Job's pod
        # completes while its sidecars still run), ephemeral containers too.
        actions.kill_pod = True
        actions.init_containers_to_start = []
        actions.ephemeral_to_start = []
    return actions


def _init_actions(
    actions: PodActions,
    init_specs: list[dict[str, Any]],
    app_specs: list[dict[str, Any]],
    latest: dict[str, ContainerState],
    policy: str,
    liveness_failed: frozenset[str],
    started: frozenset[str] | None,
) -> bool:
    """The init containers' part of the plan, as the kubelet's
    computeInitContainerActions: True once the pod is initialized (every
    regular init container exited 0, every sidecar running and started).

    Walks the init containers from the last: the last one that has a state
    is where the sequence stands (the runtime may have removed the earlier
    ones' records), everything before it ran. Regular init containers
    before that point need nothing; sidecars before it are kept running
    (restarted on exit whatever the pod's restartPolicy, on a failed
    liveness or startup probe, or on a changed definition)."""
    if not init_specs:
        return True
    initialized = any(
        (st := latest.get(c["name"])) is not None and st.state in ("created", "running")
        for c in app_specs
    )
    seen_later = initialized
    to_start: list[int] = []
    last = len(init_specs) - 1
    for i in range(last, -1, -1):
        c = init_specs[i]
        name = c["name"]
        sidecar = is_sidecar(c)
        st = latest.get(name)
        if st is None:
            if seen_later and sidecar:
                to_start.append(i)
            continue
        if seen_later and not sidecar:
            continue
        if st.state == "created":
            actions.containers_to_kill[st.id] = f"init container {name} was never started"
            to_start.append(i)
        elif st.state == "running":
            first_start = not seen_later and i != last
            if sidecar and _running_sidecar(actions, c, st, i, first_start, liveness_failed,
                                             started, to_start):  # fmt: skip
                initialized = initialized or i == last
        elif st.state == "exited":
            if sidecar:
                to_start.append(i)
            elif st.exit_code != 0:
                if policy == "Never":
                    actions.init_failed = True
                    actions.kill_pod = True
                    actions.init_containers_to_start = []
                    return False
                to_start.append(i)
            elif i == last:
                initialized = True
            else:
                to_start.append(i + 1)
        else:  # unknown: kill what is left of it and run it again
            actions.containers_to_kill[st.id] = f"init container {name} is in an unknown state"
            if not sidecar and policy == "Never":
                actions.init_failed = True
                actions.kill_pod = True
                actions.init_containers_to_start = []
                return False
            to_start.append(i)
        seen_later = True
    if not seen_later:
        to_start.append(0)
    actions.init_containers_to_start = [init_specs[i]["name"] for i in sorted(set(to_start))]
    return initialized


def _running_sidecar(
    actions: PodActions,
    c: Mapping[str, Any],
    st: ContainerState,
    i: int,
    first_start: bool,
    liveness_failed: frozenset[str],
    started: frozenset[str] | None,
    to_start: list[int],
) -> bool:
    """Plan for a running sidecar; True once it counts as started (no
    startup probe, or it succeeded): the init sequence goes on past it."""
    name = c["name"]
    probed = bool(c.get("startupProbe"))
    if probed and started is not None and name not in started:
        if name in liveness_failed:  # its startup probe failed for good
            actions.containers_to_kill[st.id] = f"init container {name} failed startup probe"
            to_start.append(i)
        return False  # the next init container waits for its startup probe
    if first_start:
        to_start.append(i + 1)  # started for the first time: on to the next one
    if st.hash and st.hash != container_hash(c):
        actions.containers_to_kill[st.id] = f"init container {name} definition changed"
        to_start.append(i)
    elif name in liveness_failed:
        actions.containers_to_kill[st.id] = f"init container {name} failed liveness probe"
        to_start.append(i)
    return True


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
        actions.init_containers_to_start = [init_specs[0]["name"]]
        return actions
    for c in app_specs:
        st = latest.get(c["name"])
        if st is not None and st.state == "exited" and not _should_restart(policy, st.exit_code):
            continue
        actions.containers_to_start.append(c["name"])
    return actions
