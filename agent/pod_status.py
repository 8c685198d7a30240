"""compute_pod_status: the pod's status as the kubelet reports it.

Pure: from the pod, what CRI says of its sandbox and containers, the probe
results and the reasons the last sync left (image pull errors, crash-loop
backoff, config errors), build `status` in Kubernetes JSON: phase,
conditions, podIP(s), hostIP, startTime, qosClass and per-container
state/lastState/ready/started/restartCount/image/imageID/containerID.
It never talks to the runtime or the API server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.pod_actions import is_sidecar
from agent.termination_message import cap_pod_messages
from controlplane.api.qos import qos_class
from machinery import rfc3339


@dataclass(frozen=True)
class ContainerInfo:
    """One container attempt as CRI reports it (times in seconds)."""

    id: str
    name: str
    state: str  # created | running | exited | unknown
    attempt: int = 0
    exit_code: int = 0
    reason: str = ""
    message: str = ""
    created_at: float = 0.0
    started_at: float = 0.0
    finished_at: float = 0.0
    image: str = ""
    image_ref: str = ""


@dataclass(frozen=True)
class Waiting:
    """Why a container is not running, as the last sync found it."""

    reason: str
    message: str = ""


@dataclass
class PodObservation:
    sandbox_ready: bool = False
    pod_ips: tuple[str, ...] = ()
    # Newest attempt first for each name.
    containers: tuple[ContainerInfo, ...] = ()
    waiting: dict[str, Waiting] = field(default_factory=dict)
    ready: frozenset[str] = frozenset()
    started: frozenset[str] = frozenset()
    runtime_name: str = "skiff"
    # Why a running container is not ready: the last readiness probe
    # failure ("Get http://...: connection refused"), by container name.
    probe_messages: Mapping[str, str] = field(default_factory=dict)
    # Why a running container could not be resized in place, by name.
    resize_errors: Mapping[str, str] = field(default_factory=dict)
    # Why a resize waits (reason Infeasible or Deferred, message), if one does.
    resize_pending: tuple[str, str] | None = None
    # status.containerStatuses[].resources by name, for the containers the
    # runtime has: what is allocated, with what is applied while running.
    resources: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def _attempts(obs: PodObservation) -> dict[str, list[ContainerInfo]]:
    out: dict[str, list[ContainerInfo]] = {}
    for c in obs.containers:
        out.setdefault(c.name, []).append(c)
    return out


def _state(
    c: ContainerInfo | None, waiting: Waiting | None, runtime: str, default: str
) -> dict[str, Any]:
    if c is not None and c.state == "running" and waiting is None:
        return {"running": {"startedAt": rfc3339.format_time(c.started_at)}}
    if c is not None and c.state == "exited" and waiting is None:
        return {"terminated": _terminated(c, runtime)}
    if waiting is not None:
        w = {"reason": waiting.reason}
        if waiting.message:
            w["message"] = waiting.message
        return {"waiting": w}
    return {"waiting": {"reason": default}}


def _terminated(c: ContainerInfo, runtime: str) -> dict[str, Any]:
    reason = c.reason or ("Completed" if c.exit_code == 0 else "Error")
    t: dict[str, Any] = {
        "exitCode": c.exit_code,
        "reason": reason,
        "startedAt": rfc3339.format_time(c.started_at) if c.started_at else None,
        "finishedAt": rfc3339.format_time(c.finished_at) if c.finished_at else None,
        "containerID": f"{runtime}://{c.id}",
    }
    if c.message:
        t["message"] = c.message
    return t


def container_statuses(
    specs: list[dict[str, Any]],
    obs: PodObservation,
    init: bool = False,
    has_init_containers: bool = False,
) -> list[dict[str, Any]]:
    """One status per spec. A container the runtime has not made yet waits
    with the kubelet's default reason: PodInitializing in a pod with init
    containers (its init, app and ephemeral containers alike), else
    ContainerCreating."""
    attempts = _attempts(obs)
    default = "PodInitializing" if has_init_containers else "ContainerCreating"
    out = []
    for spec in specs:
        name = spec["name"]
        tries = attempts.get(name, [])
        latest = tries[0] if tries else None
        previous = tries[1] if len(tries) > 1 else None
        waiting = obs.waiting.get(name)
        status: dict[str, Any] = {
            "name": name,
            "image": spec.get("image", ""),
            "imageID": latest.image_ref if latest else "",
            "restartCount": latest.attempt if latest else 0,
            "ready": name in obs.ready and latest is not None and latest.state == "running",
            "state": _state(latest, waiting, obs.runtime_name, default),
            "lastState": {},
        }
        if latest is not None:
            status["containerID"] = f"{obs.runtime_name}://{latest.id}"
            if name in obs.resources:
                status["resources"] = dict(obs.resources[name])
        # started: running and past its startup probe; init containers
        # carry it too (a native sidecar's is what lets the next one start).
        status["started"] = (
            latest is not None and latest.state == "running" and (name in obs.started)
        )
        if waiting is not None and latest is not None and latest.state == "exited":
            # Backing off or failing to restart: the last run is the last state.
            status["lastState"] = {"terminated": _terminated(latest, obs.runtime_name)}
        elif previous is not None and previous.state == "exited":
            status["lastState"] = {"terminated": _terminated(previous, obs.runtime_name)}
        if init and not is_sidecar(spec) and latest is not None:
            # A regular init container is ready once it has exited 0; a
            # sidecar, like an app container, while running and ready.
            status["ready"] = latest.state == "exited" and latest.exit_code == 0
        out.append(status)
    return out


def _resize_conditions(
    obs: PodObservation, previous: Mapping[str, Mapping[str, Any]], stamp: str
) -> list[dict[str, Any]]:
    """The kubelet's resize conditions: PodResizePending (Infeasible or
    Deferred: not allocated) and PodResizeInProgress with reason Error (the
    runtime refused it); each keeps its transition time while its reason
    stays."""
    out = []
    found = []
    if obs.resize_pending is not None:
        found.append(("PodResizePending", *obs.resize_pending))
    if obs.resize_errors:
        text = "; ".join(f"{n}: {m}" for n, m in sorted(obs.resize_errors.items()))
        found.append(("PodResizeInProgress", "Error", text))
    for kind, reason, message in found:
        cond = {"type": kind, "status": "True", "reason": reason, "message": message,
                "lastTransitionTime": stamp}  # fmt: skip
        before = previous.get(kind)
        if before is not None and before.get("reason") == reason:
            cond["lastTransitionTime"] = before.get("lastTransitionTime", stamp)
        out.append(cond)
    return out


def _initialized(init: list[dict[str, Any]], sidecars: set[str], app: list[dict[str, Any]]) -> bool:
    """The Initialized condition, as the kubelet's: every regular init
    container exited 0 and every native sidecar started; or an app
    container has run already (a sidecar restarting later does not take
    the pod back to initializing)."""
    if any(
        "running" in s["state"] or "terminated" in s["state"] or s["lastState"].get("terminated")
        for s in app
    ):
        return True
    for s in init:
        if s["name"] in sidecars:
            if not s["started"]:
                return False
        elif "terminated" not in s["state"] or s["state"]["terminated"]["exitCode"] != 0:
            return False
    return True


def _phase(
    pod: Mapping[str, Any], init_done: bool, init_failed: bool, app: list[dict[str, Any]]
) -> str:
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    if init_failed:
        return "Failed"
    if not init_done:
        return "Pending"
    running = waiting = stopped = succeeded = 0
    for s in app:
        state = s["state"]
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            succeeded += state["terminated"]["exitCode"] == 0
        elif s["lastState"].get("terminated"):
            # Waiting to restart after a run: it has stopped, it will run again.
            stopped += 1
            succeeded += s["lastState"]["terminated"]["exitCode"] == 0
        else:
            waiting += 1
    if waiting:
        return "Pending"
    if running:
        return "Running"
    if stopped:
        if policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        if policy == "Never":
            return "Failed"
        return "Running"
    return "Pending"


def _condition(
    kind: str, ok: bool, now: str, reason: str = "", message: str = ""
) -> dict[str, Any]:
    cond: dict[str, Any] = {
        "type": kind,
        "status": "True" if ok else "False",
        "lastTransitionTime": now,
    }
    if reason and not ok:
        cond["reason"] = reason
        if message:
            cond["message"] = message
    return cond


def _unready_message(
    statuses: list[dict[str, Any]], what: str, probe_messages: Mapping[str, str]
) -> str:
    """The kubelet's "containers with unready status: [a b]", followed by
    each one's last readiness probe failure when there is one."""
    names = [s["name"] for s in statuses if not s["ready"]]
    if not names:
        return ""
    text = f"containers with {what} status: [{' '.join(names)}]"
    details = [f"{n}: {probe_messages[n]}" for n in names if probe_messages.get(n)]
    return "; ".join([text, *details])


def compute_pod_status(
    pod: Mapping[str, Any],
    obs: PodObservation,
    now: float,
    host_ip: str = "",
    init_failed: bool = False,
) -> dict[str, Any]:
    spec = pod.get("spec") or {}
    old = pod.get("status") or {}
    init_specs = spec.get("initContainers") or []
    has_init = bool(init_specs)
    init = container_statuses(init_specs, obs, init=True, has_init_containers=has_init)
    app = container_statuses(spec.get("containers") or [], obs, has_init_containers=has_init)
    sidecars = {c["name"] for c in init_specs if is_sidecar(c)}
    init_done = _initialized(init, sidecars, app)
    phase = _phase(pod, init_done, init_failed, app)
    counted = [s for s in init if s["name"] in sidecars] + app  # readiness counts sidecars
    if phase == "Failed" or phase == "Succeeded":
        for s in counted:
            s["ready"] = False
    containers_ready = bool(app) and all(s["ready"] for s in counted)
    stamp = rfc3339.format_time(now)
    previous = {c["type"]: c for c in old.get("conditions") or []}
    conditions = []
    not_ready = _unready_message(counted, "unready", obs.probe_messages)
    for kind, ok, reason, message in (
        ("PodScheduled", True, "", ""),
        ("Initialized", init_done, "ContainersNotInitialized",
         _unready_message(init, "incomplete", {})),
        ("ContainersReady", containers_ready, "ContainersNotReady", not_ready),
        ("Ready", containers_ready, "ContainersNotReady", not_ready),
    ):  # fmt: skip
        cond = _condition(kind, ok, stamp, reason, message)
        before = previous.get(kind)
        if before is not None and before.get("status") == cond["status"]:
            cond["lastTransitionTime"] = before.get("lastTransitionTime", stamp)
        conditions.append(cond)
    conditions.extend(_resize_conditions(obs, previous, stamp))
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": conditions,
        "hostIP": host_ip,
        "startTime": old.get("startTime") or stamp,
        "qosClass": qos_class(dict(pod)).value,
        "containerStatuses": app,
    }
    if init_specs:
        status["initContainerStatuses"] = init
    ephemeral = spec.get("ephemeralContainers") or []
    if ephemeral:
        # Run once, never probed, never ready (the kubelet's own view).
        status["ephemeralContainerStatuses"] = container_statuses(
            ephemeral, obs, init=True, has_init_containers=has_init
        )
        for s in status["ephemeralContainerStatuses"]:
            s["ready"] = False
            del s["started"]
    cap_pod_messages(
        [*init, *app, *status.get("ephemeralContainerStatuses", [])],
        len(init_specs) + len(spec.get("containers") or []),
    )
    if obs.pod_ips:
        status["podIP"] = obs.pod_ips[0]
        status["podIPs"] = [{"ip": ip} for ip in obs.pod_ips]
    elif old.get("podIP") and phase in ("Succeeded", "Failed"):
        status["podIP"] = old["podIP"]
        status["podIPs"] = old.get("podIPs") or [{"ip": old["podIP"]}]
    if spec.get("hostNetwork") and host_ip:
        status["podIP"] = host_ip
        status["podIPs"] = [{"ip": host_ip}]
    return status
