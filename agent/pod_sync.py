"""SyncPod: carry out compute_pod_actions' plan through CRI, in steps.

1. kill the pod (all containers, then the sandbox) if the plan says so;
2. kill the containers the plan names;
3. create the sandbox (volumes first) if needed;
4. start the ephemeral containers, then the init containers the plan names
   (the next one of the init sequence, native sidecars to restart), then
   the app containers, each through: crash-loop backoff, image pull per
   imagePullPolicy (with its own backoff), env and volume mounts,
   CreateContainer, StartContainer;
5. resize running containers in place (agent/resize.py).
Failures do not raise: they become the waiting reason and message of the
container (ErrImagePull, ImagePullBackOff, CrashLoopBackOff,
CreateContainerConfigError, CreateContainerError, RunContainerError), which
compute_pod_status reports. Termination runs preStop hooks, then stops the
app containers within the grace period, then the native sidecars in reverse
order, then the sandbox.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.backoff import Backoff
from agent.claims import read_only_mounts
from agent.cri_client import CRIClient, CRIError
from agent.pod_actions import (
    ContainerState,
    PodActions,
    PodRuntimeState,
    SandboxState,
    compute_pod_actions,
    container_hash,
    is_sidecar,
)
from agent.pod_config import (
    DEFAULT_SECCOMP_ROOT,
    ConfigError,
    NodeSettings,
    container_config,
    resolve_env,
    run_as_non_root_error,
    sandbox_config,
)
from agent.pod_status import ContainerInfo, Waiting
from agent.probes import http_status, resolve_port
from agent.resize import Resizer
from agent.resources import container_resources
from agent.runtime_view import PodRecord
from agent.termination_message import message_mount
from agent.volumes import (
    VolumeSources,
    container_mounts,
    pod_dir,
    setup_volumes,
    volume_paths,
)
from controlplane.api.qos import qos_class
from proto.runtime.v1 import api_pb2 as cri

log = logging.getLogger("skiff.agent.sync")
POST_START_TIMEOUT = 30  # seconds a postStart hook may run

DataLookup = Callable[[str, str], Mapping[str, str] | None]


@dataclass
class SyncResult:
    waiting: dict[str, Waiting] = field(default_factory=dict)
    init_failed: bool = False
    pod_ips: tuple[str, ...] = ()
    actions: PodActions | None = None
    # container name -> why its in-place resize failed (agent/resize.py)
    resize_errors: dict[str, str] = field(default_factory=dict)


def pull_policy(container: Mapping[str, Any]) -> str:
    policy = container.get("imagePullPolicy")
    if policy:
        return str(policy)
    image = str(container.get("image", ""))
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    tag = last.split(":", 1)[1] if ":" in last else "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


@dataclass
class SyncDeps:
    runtime: CRIClient
    node: NodeSettings
    root: Path
    memory_capacity: int
    now: Callable[[], float]
    volumes: VolumeSources
    config_data: DataLookup
    secret_data: DataLookup
    backoff: Backoff
    image_backoff: Backoff
    pull_auth: Callable[[Mapping[str, Any], str], cri.AuthConfig | None] = lambda pod, image: None
    # The service environment variables for a pod (the kubelet's service links).
    service_env: Callable[[Mapping[str, Any]], Mapping[str, str]] = lambda pod: {}
    runtime_handler: str = ""
    # localhostProfile seccomp profiles are taken from under here only.
    seccomp_root: Path = DEFAULT_SECCOMP_ROOT


class PodSyncer:
    def __init__(self, deps: SyncDeps) -> None:
        self.d = deps
        self._ips: dict[str, tuple[str, ...]] = {}
        # Sandboxes this agent has stopped (StopPodSandbox is sent once for
        # a NOTREADY one, not on every later sync of its pod).
        self._stopped_sandboxes: set[str] = set()
        # Image pull failures per (pod uid, container, image): when and why.
        self._pull_failed_at: dict[str, float] = {}
        self._pull_errors: dict[str, str] = {}
        self.resizer = Resizer(deps.runtime)

    def sync(
        self,
        pod: Mapping[str, Any],
        record: PodRecord | None,
        liveness_failed: frozenset[str] = frozenset(),
        started: frozenset[str] | None = None,
    ) -> SyncResult:
        rec = record or PodRecord(pod["metadata"]["uid"])
        actions = compute_pod_actions(dict(pod), rec.actions_state(), liveness_failed, started)
        result = SyncResult(init_failed=actions.init_failed, actions=actions)
        grace = int((pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30))

        # 1 + 2: kill
        if actions.kill_pod:
            self.kill_pod(pod, rec, grace)
            if not actions.create_sandbox:
                return result
        else:
            for cid, why in actions.containers_to_kill.items():
                log.info("pod=%s container_id=%s killing: %s", _name(pod), cid, why)
                self._stop_container(pod, rec, cid, grace)

        # 3: sandbox
        sandbox_id = actions.sandbox_id
        if actions.create_sandbox:
            try:
                sandbox_id = self._create_sandbox(pod, actions.attempt)
            except (CRIError, ConfigError, OSError) as err:
                msg = f"failed to create pod sandbox: {err}"
                log.warning("pod=%s %s", _name(pod), msg)
                for c in self._all_specs(pod):
                    result.waiting[c["name"]] = Waiting("ContainerCreating", msg)
                return result
        result.pod_ips = self._sandbox_ips(sandbox_id)
        sb_config = sandbox_config(pod, self.d.node, actions.attempt)

        # 4: containers
        latest = _latest(rec.containers)
        for name in actions.ephemeral_to_start:
            spec = self._spec(pod, name, init=False, key="ephemeralContainers")
            self._start(pod, spec, None, sandbox_id, sb_config, result, latest)
        inits, apps = actions.init_containers_to_start, actions.containers_to_start
        state = rec.actions_state()
        if actions.create_sandbox:
            made = SandboxState(id=sandbox_id, ready=True, attempt=actions.attempt)
            state = PodRuntimeState((made, *state.sandboxes), state.containers)
        for _ in range(len((pod.get("spec") or {}).get("initContainers") or []) + 1):
            fresh: list[Mapping[str, Any]] = []
            for name in inits:
                spec = self._spec(pod, name, init=True)
                self._start(pod, spec, latest.get(name), sandbox_id, sb_config, result)
                if name in result.waiting and not is_sidecar(spec):
                    return result  # the pod waits for this init container
                if name not in result.waiting and is_sidecar(spec) and not spec.get("startupProbe"):
                    fresh.append(spec)
            if apps or not fresh or len(fresh) != len(inits):
                break
            # Sidecars without a startup probe count as started once running:
            # what follows them starts in this sync, as if in one step with
            # them (a pod with a sidecar starts as fast as one with two
            # containers), not at the next one.
            state = _with_running(state, fresh)
            started_now = (started or frozenset()) | {str(s["name"]) for s in fresh}
            nxt = compute_pod_actions(dict(pod), state, liveness_failed, started_now)
            if nxt.kill_pod or nxt.create_sandbox:
                break
            inits, apps = nxt.init_containers_to_start, nxt.containers_to_start
            if apps:
                result.actions = nxt
        for name in apps:
            spec = self._spec(pod, name, init=False)
            self._start(pod, spec, latest.get(name), sandbox_id, sb_config, result)

        # 5: resize running containers in place
        self._resize(pod, rec, actions, result)
        return result

    def _resize(
        self, pod: Mapping[str, Any], rec: PodRecord, actions: PodActions, result: SyncResult
    ) -> None:
        latest = _latest(rec.containers)
        running: dict[str, tuple[str, Mapping[str, Any]]] = {}
        wanted: dict[str, cri.LinuxContainerResources] = {}
        qos = qos_class(dict(pod))
        for spec in [*self._sidecars(pod), *((pod.get("spec") or {}).get("containers") or [])]:
            st = latest.get(spec["name"])
            if st is None or st.state != "running" or st.id in actions.containers_to_kill:
                continue
            running[spec["name"]] = (st.id, spec)
            wanted[spec["name"]] = container_resources(dict(spec), qos, self.d.memory_capacity)
        if not running:
            return
        outcome = self.resizer.sync(running, wanted)
        result.resize_errors.update(outcome.errors)
        grace = int((pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30))
        for cid in outcome.restart:
            log.info("pod=%s container_id=%s restarting to resize", _name(pod), cid[:12])
            self._stop_container(pod, rec, cid, grace)

    # steps
    def _create_sandbox(self, pod: Mapping[str, Any], attempt: int) -> str:
        if (pod.get("spec") or {}).get("hostUsers") is False:
            self._check_user_namespaces()
        setup_volumes(self.d.root, pod, self.d.volumes)
        cfg = sandbox_config(pod, self.d.node, attempt)
        Path(cfg.log_directory).mkdir(parents=True, exist_ok=True)
        sandbox_id = self.d.runtime.run_pod_sandbox(cfg, self.d.runtime_handler)
        log.info(
            "pod=%s uid=%s sandbox=%s attempt=%d created",
            _name(pod),
            pod["metadata"]["uid"],
            sandbox_id[:12],
            attempt,
        )
        return sandbox_id

    def _check_user_namespaces(self) -> None:
        """hostUsers: false needs a runtime handler that says it supports
        user namespaces (CRI Status runtime_handlers[].features); without
        one the pod is refused with the kubelet's reason, never run in the
        host's user namespace."""
        handler = self.d.runtime_handler
        handlers = self.d.runtime.status().runtime_handlers
        found = next((h for h in handlers if h.name == handler), None)
        if found is None or not found.features.user_namespaces:
            raise ConfigError(f'RuntimeClass handler "{handler}" does not support user namespaces')

    def _sandbox_ips(self, sandbox_id: str) -> tuple[str, ...]:
        if sandbox_id in self._ips:
            return self._ips[sandbox_id]
        try:
            st = self.d.runtime.pod_sandbox_status(sandbox_id).status
        except CRIError:
            return ()
        ips = tuple(ip for ip in [st.network.ip, *(a.ip for a in st.network.additional_ips)] if ip)
        if ips:
            self._ips[sandbox_id] = ips
        return ips

    def _start(
        self,
        pod: Mapping[str, Any],
        spec: Mapping[str, Any],
        last: ContainerInfo | None,
        sandbox_id: str,
        sb_config: cri.PodSandboxConfig,
        result: SyncResult,
        latest: Mapping[str, ContainerInfo] | None = None,
    ) -> None:
        """Start one container; `latest` is given for an ephemeral one (its
        targetContainerName's running container shares its PID namespace)."""
        name = spec["name"]
        uid = pod["metadata"]["uid"]
        key = f"{uid}/{name}"
        if last is not None and last.state == "exited":
            # A container that never started (StartContainer failed: no
            # started_at) ran for nothing; it must not count as a long run
            # that resets the back-off.
            ran = max(0.0, last.finished_at - last.started_at) if last.started_at > 0 else 0.0
            wait = self.d.backoff.remaining(key, last.finished_at, ran)
            if wait > 0:
                result.waiting[name] = Waiting(
                    "CrashLoopBackOff",
                    f"back-off {int(self.d.backoff.delay(key))}s restarting failed "
                    f"container={name} pod={_name(pod)}",
                )
                return
        restart_count = last.attempt + 1 if last is not None else 0
        image_ref = self._ensure_image(pod, spec, sb_config, result)
        if image_ref is None:
            return
        if (spec.get("securityContext") or {}).get("runAsNonRoot") or (
            (pod.get("spec") or {}).get("securityContext") or {}
        ).get("runAsNonRoot"):
            refused = run_as_non_root_error(pod, spec, self.d.runtime.image_status(image_ref))
            if refused:
                result.waiting[name] = Waiting("CreateContainerConfigError", refused)
                return
        try:
            env = resolve_env(
                pod,
                spec,
                self.d.node,
                self.d.config_data,
                self.d.secret_data,
                self.d.service_env(pod),
            )
            mounts = container_mounts(
                spec,
                volume_paths(self.d.root, pod, self.d.volumes.claims),
                pod_dir(self.d.root, pod) / "volume-subpaths",
            )
            read_only_mounts(pod, spec, mounts)
            message_file = message_mount(pod_dir(self.d.root, pod), spec)
            if message_file is not None:
                mounts.append(message_file)
            resources = container_resources(
                dict(spec), qos_class(dict(pod)), self.d.memory_capacity
            )
            cfg = container_config(
                pod, spec, restart_count, env, mounts, resources, image_ref, self.d.seccomp_root
            )
        except (OSError, ConfigError) as err:
            result.waiting[name] = Waiting("CreateContainerConfigError", str(err))
            return
        target = str(spec.get("targetContainerName") or "")
        if latest is not None and target:
            running = latest.get(target)
            if running is None or running.state != "running":
                result.waiting[name] = Waiting(
                    "CreateContainerConfigError", f"target container {target} is not running"
                )
                return
            opts = cfg.linux.security_context.namespace_options
            opts.pid = cri.TARGET
            opts.target_id = running.id
        try:
            cid = self.d.runtime.create_container(sandbox_id, cfg, sb_config)
        except CRIError as err:
            result.waiting[name] = Waiting("CreateContainerError", err.message)
            return
        self.resizer.created(cid, resources, spec.get("resources") or {})
        if last is not None and last.state == "exited":
            self.d.backoff.restarted(key)
        try:
            self.d.runtime.start_container(cid)
        except CRIError as err:
            result.waiting[name] = Waiting("RunContainerError", err.message)
            return
        log.info(
            "pod=%s container=%s container_id=%s started (restart %d)",
            _name(pod),
            name,
            cid[:12],
            restart_count,
        )
        hook = (spec.get("lifecycle") or {}).get("postStart")
        if hook:
            ips = self._sandbox_ips(sandbox_id)
            self._post_start(pod, name, cid, hook, ips, _ports(spec), result)

    def _post_start(
        self,
        pod: Mapping[str, Any],
        name: str,
        cid: str,
        hook: Mapping[str, Any],
        ips: tuple[str, ...],
        ports: Mapping[str, int],
        result: SyncResult,
    ) -> None:
        """Run the postStart hook as the kubelet does, right after the start;
        if it fails, kill the container (FailedPostStartHook): its restart
        policy decides what comes next."""
        err = self._hook(cid, hook, POST_START_TIMEOUT, ips, ports)
        if err is None:
            return
        log.warning("pod=%s container=%s FailedPostStartHook: %s", _name(pod), name, err)
        grace = int((pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30))
        try:
            self.d.runtime.stop_container(cid, grace)
        except CRIError as stop_err:
            log.warning("pod=%s container_id=%s stop failed: %s", _name(pod), cid[:12], stop_err)
        result.waiting[name] = Waiting("PostStartHookError", f"FailedPostStartHook: {err}")

    def _hook(
        self,
        cid: str,
        hook: Mapping[str, Any],
        timeout: int,
        ips: tuple[str, ...],
        ports: Mapping[str, int],
    ) -> str | None:
        """Run a lifecycle hook (exec or httpGet); None if it succeeded, else why not."""
        try:
            if "exec" in hook:
                cmd = hook["exec"]["command"]
                resp = self.d.runtime.exec_sync(cid, cmd, max(1, timeout))
                if resp.exit_code != 0:
                    out = (resp.stdout + resp.stderr).decode(errors="replace").strip()
                    return f"Exec lifecycle hook ({cmd}) exited with {resp.exit_code}: {out}"
                return None
            if "httpGet" in hook:
                h = hook["httpGet"]
                host = h.get("host") or (ips or ("127.0.0.1",))[0]
                port = resolve_port(h["port"], ports)
                path = h.get("path", "/")
                path = path if path.startswith("/") else "/" + path
                url = f"{h.get('scheme', 'HTTP').lower()}://{host}:{port}{path}"
                code = http_status(url, max(1, timeout))
                return None if code < 400 else f"HTTP lifecycle hook ({path}) returned {code}"
            return "lifecycle hook has no handler (exec or httpGet)"
        except CRIError as cri_err:
            return cri_err.message
        except (OSError, ValueError) as os_err:
            return str(os_err)

    def _ensure_image(
        self,
        pod: Mapping[str, Any],
        spec: Mapping[str, Any],
        sb_config: cri.PodSandboxConfig,
        result: SyncResult,
    ) -> str | None:
        image = str(spec["image"])
        name = spec["name"]
        policy = pull_policy(spec)
        present = None
        if policy != "Always":
            try:
                present = self.d.runtime.image_status(image)
            except CRIError as err:
                result.waiting[name] = Waiting("ErrImagePull", err.message)
                return None
            if present is not None:
                return present.id
            if policy == "Never":
                result.waiting[name] = Waiting(
                    "ErrImageNeverPull",
                    f'Container image "{image}" is not present with pull policy of Never',
                )
                return None
        key = f"{pod['metadata']['uid']}/{name}/{image}"
        wait = self.d.image_backoff.remaining(key, self._pull_failed_at.get(key, 0.0))
        if wait > 0:
            result.waiting[name] = Waiting(
                "ImagePullBackOff",
                f'Back-off pulling image "{image}": {self._pull_errors.get(key, "")}',
            )
            return None
        try:
            ref = self.d.runtime.pull_image(image, self.d.pull_auth(pod, image), sb_config)
        except CRIError as err:
            self._pull_failed_at[key] = self.d.now()
            self._pull_errors[key] = err.message
            self.d.image_backoff.restarted(key)
            result.waiting[name] = Waiting("ErrImagePull", err.message)
            return None
        self.d.image_backoff.forget(key)
        self._pull_failed_at.pop(key, None)
        return ref

    # termination
    def kill_pod(self, pod: Mapping[str, Any], rec: PodRecord, grace: int) -> None:
        """Stop every container, then the sandboxes. As the kubelet: the
        app containers (and regular init containers) stop together first,
        then the native sidecars one by one in reverse spec order, each
        with what is left of the grace period, so the app keeps its
        sidecars (a proxy, a log shipper) until it has stopped."""
        running = [c for c in rec.containers if c.state in ("running", "created")]
        order = [c["name"] for c in self._sidecars(pod)]
        sidecars = sorted(
            (c for c in running if c.name in order),
            key=lambda c: order.index(c.name),
            reverse=True,
        )
        started = self.d.now()
        threads = [
            threading.Thread(target=self._stop_container, args=(pod, rec, c.id, grace), daemon=True)
            for c in running
            if c not in sidecars
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for c in sidecars:
            left = max(0, grace - int(self.d.now() - started))
            self._stop_container(pod, rec, c.id, left)
        for sb in rec.sandboxes:
            # NOTREADY ones too, as the kubelet does: a sandbox whose holder
            # died (or that the runtime gave up on) still has its network
            # (IP, veth, NAT rules) until StopPodSandbox tears it down.
            if sb.state == cri.SANDBOX_READY or sb.id not in self._stopped_sandboxes:
                try:
                    self.d.runtime.stop_pod_sandbox(sb.id)
                except CRIError as err:
                    if not err.not_found:
                        raise
                self._stopped_sandboxes.add(sb.id)
            self._ips.pop(sb.id, None)

    def _stop_container(self, pod: Mapping[str, Any], rec: PodRecord, cid: str, grace: int) -> None:
        info = next((c for c in rec.containers if c.id == cid), None)
        started = self.d.now()
        if (
            info is not None
            and info.state == "running"
            and pod["metadata"].get("deletionTimestamp")
        ):
            spec = next((c for c in self._all_specs(pod) if c["name"] == info.name), None)
            hook = ((spec or {}).get("lifecycle") or {}).get("preStop")
            if hook:
                self._run_hook(pod, cid, hook, grace)
        # As the kubelet: the grace period less the whole seconds a preStop
        # hook took (int() of the remainder would cut 3 s to 2 s right away).
        remaining = max(0, grace - int(self.d.now() - started))
        try:
            self.d.runtime.stop_container(cid, remaining)
        except CRIError as err:
            if not err.not_found:
                log.warning("pod=%s container_id=%s stop failed: %s", _name(pod), cid[:12], err)

    def _run_hook(
        self, pod: Mapping[str, Any], cid: str, hook: Mapping[str, Any], grace: int
    ) -> None:
        err = self._hook(cid, hook, grace, self._ips_for(pod), {})
        if err is not None:  # a failed preStop hook does not stop the kill
            log.info("pod=%s container_id=%s preStop hook failed: %s", _name(pod), cid[:12], err)

    def _ips_for(self, pod: Mapping[str, Any]) -> tuple[str, ...]:
        ips = (pod.get("status") or {}).get("podIPs") or []
        return tuple(p["ip"] for p in ips)

    def remove_pod(self, rec: PodRecord) -> None:
        """Remove every container and sandbox of a terminated pod."""
        for c in rec.containers:
            self.resizer.drop(c.id)
            try:
                self.d.runtime.remove_container(c.id)
            except CRIError as err:
                if not err.not_found:
                    raise
        for sb in rec.sandboxes:
            self.d.runtime.remove_pod_sandbox(sb.id)
            self._ips.pop(sb.id, None)
            self._stopped_sandboxes.discard(sb.id)

    # helpers
    def _sidecars(self, pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        return [c for c in (pod.get("spec") or {}).get("initContainers") or [] if is_sidecar(c)]

    def _all_specs(self, pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        spec = pod.get("spec") or {}
        return [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]

    def _spec(
        self, pod: Mapping[str, Any], name: str, init: bool, key: str = ""
    ) -> Mapping[str, Any]:
        key = key or ("initContainers" if init else "containers")
        for c in (pod.get("spec") or {}).get(key) or []:
            if c["name"] == name:
                return dict(c)
        raise KeyError(name)


def _with_running(state: PodRuntimeState, specs: list[Mapping[str, Any]]) -> PodRuntimeState:
    """`state` with the containers of `specs` just started (running)."""
    now = tuple(
        ContainerState(id=f"started/{s['name']}", name=str(s["name"]), state="running",
                       hash=container_hash(s))
        for s in specs
    )  # fmt: skip
    return PodRuntimeState(state.sandboxes, now + state.containers)


def _latest(containers: list[ContainerInfo]) -> dict[str, ContainerInfo]:
    out: dict[str, ContainerInfo] = {}
    for c in containers:
        out.setdefault(c.name, c)
    return out


def _ports(spec: Mapping[str, Any]) -> dict[str, int]:
    return {p["name"]: int(p["containerPort"]) for p in spec.get("ports") or [] if p.get("name")}


def _name(pod: Mapping[str, Any]) -> str:
    md = pod["metadata"]
    return f"{md.get('namespace', 'default')}/{md['name']}"
