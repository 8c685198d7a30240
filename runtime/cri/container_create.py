"""CreateContainer: resolve the image, build the monitor spec (rootfs overlay
of the image layers plus a writable upper dir, mounts, user, capabilities,
seccomp...), check what can be checked (command, user, mount sources,
seccomp profile, resources; a TARGET pid namespace joins that running
container's), make the cgroup and the writable layer, and
save the spec. StartContainer starts the monitor from it, as containerd
runs `runc create` and `runc start` in its StartContainer.

Each step pushes its undo on an ExitStack; a failure leaves no directory,
cgroup, monitor or image hold behind (tests/unit/runtime/test_undo.py fails
each host step in turn). Reaches the host only through `svc.host`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import secrets
import signal
import time
from pathlib import Path
from typing import Any

from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.cri import container_spec, sandbox_status, stored_config, validate
from runtime.cri.seccomp_profiles import compile_profile
from runtime.cri.service import RuntimeService
from runtime.linux import cgroups
from runtime.store.records import Container, ContainerState, SandboxState

log = logging.getLogger("skiff.runtime.container")


def _target_pid_namespace(svc: RuntimeService, sandbox_id: str, target_id: str) -> str:
    """NamespaceMode TARGET (an ephemeral container's targetContainerName):
    the PID namespace of a running container of the same sandbox."""
    if not target_id:
        raise errors.InvalidArgument("pid namespace TARGET needs a target_id")
    target = svc.refresh(svc.containers.get(target_id))
    if target.sandbox_id != sandbox_id:
        raise errors.InvalidArgument(f"target container {target_id} is not in sandbox {sandbox_id}")
    if target.state != ContainerState.RUNNING or not target.init_pid:
        raise errors.FailedPrecondition(f"target container {target_id} is not running")
    return f"/proc/{target.init_pid}/ns/pid"


def run(
    svc: RuntimeService, req: api_pb2.CreateContainerRequest
) -> api_pb2.CreateContainerResponse:
    cfg = req.config
    if not cfg.metadata.name:
        raise errors.InvalidArgument("container metadata.name is required")
    if not cfg.image.image:
        raise errors.InvalidArgument("container image is required")
    validate.container_config(cfg)
    s = sandbox_status.refresh(svc, svc.sandboxes.get(req.pod_sandbox_id))
    if s.state != SandboxState.READY:
        raise errors.FailedPrecondition(f"sandbox {s.id} is not ready")
    if svc.images is None:
        raise errors.FailedPrecondition("no image service is configured")
    image = svc.images.resolve(cfg.image.image)
    image_config: dict[str, Any] = dict((image.config or {}).get("config") or image.config or {})
    sc = cfg.linux.security_context
    sandbox_cfg = (
        req.sandbox_config if req.HasField("sandbox_config") else sandbox_status.config_of(s)
    )

    argv = container_spec.command(cfg, image_config)
    env = container_spec.environment(cfg, image_config)
    user = container_spec.user(sc, image_config)
    layers = svc.images.layer_dirs(image)
    container_spec.check_user(user, layers)
    caps = container_spec.capabilities(sc)
    mounts, root_prop = container_spec.mount_list(cfg)
    devices = container_spec.devices(cfg)
    masked, ro_paths = container_spec.masked_readonly(sc)
    res = container_spec.resources(cfg.linux.resources, svc.cfg.pids_limit)
    profile = container_spec.seccomp_profile(sc)
    bpf = compile_profile(profile, caps, svc.cfg.seccomp_profile_root) if profile else b""
    stop_signal = _stop_signal(cfg, image_config)
    apparmor = container_spec.apparmor_profile(sc, container_spec.host_has_apparmor())

    cid = secrets.token_hex(32)
    log_path = ""
    if sandbox_cfg.log_directory and cfg.log_path:
        log_path = os.path.join(sandbox_cfg.log_directory, cfg.log_path)
    parent = s.cgroup.rsplit("/", 1)[0]
    c = Container(
        id=cid,
        sandbox_id=s.id,
        name=cfg.metadata.name,
        attempt=cfg.metadata.attempt,
        config_b64=stored_config.encode(cfg),
        created_at=time.time_ns(),
        image=cfg.image.image,
        image_ref=(image.repo_digests or [image.id])[0],
        image_id=image.id,
        log_path=log_path,
        cgroup=f"{parent}/{cid}",
        resources=container_spec.resources_to_json(res, cfg.linux.resources.oom_score_adj),
        stop_signal=stop_signal,
    )
    opts = sc.namespace_options
    pid_mode: str = "private"
    if opts.pid == api_pb2.NODE:
        pid_mode = "host"
    elif opts.pid == api_pb2.POD and s.pid1:
        pid_mode = str(svc.ns_path(s.id, "pid"))
    elif opts.pid == api_pb2.TARGET:
        pid_mode = _target_pid_namespace(svc, s.id, opts.target_id)
    sb_root = svc.sandbox_root(s.id)
    ns = {
        kind: (str(svc.ns_path(s.id, kind)) if svc.ns_path(s.id, kind).exists() else None)
        for kind in ("net", "ipc", "uts")
    }
    shm = svc.sandbox_state(s.id) / "shm"
    host = svc.host
    images = svc.images
    with contextlib.ExitStack() as undo:
        root, state = svc.container_root(cid), svc.container_state(cid)
        svc.reserve(undo, svc.containers, c, root, state)
        for d in (root / "upper", root / "work", state / "rootfs"):
            host.make_dir(d)
        images.hold(image.id, cid)
        undo.callback(_quiet, lambda: images.release(image.id, cid))
        cg = svc.cgroup(c.cgroup)
        cg.create()
        undo.callback(_quiet, cg.destroy)
        if not sc.privileged:
            try:
                cg.allow_devices(
                    cgroups.DEFAULT_DEVICE_RULES + container_spec.device_rules(devices)
                )
            except OSError as exc:
                raise errors.InvalidArgument(f"device rules refused by the kernel: {exc}") from None
        try:
            cg.apply(res)
        except OSError as exc:
            raise errors.InvalidArgument(f"resources refused by the kernel: {exc}") from None
        if log_path and host.ensure_dir(Path(log_path).parent):
            undo.callback(host.remove_tree, Path(log_path).parent)
        spec = {
            "id": cid,
            "state_dir": str(state),
            "exit_dir": str(root),
            "log_path": log_path or os.devnull,
            "monitor_log": str(root / "monitor.log"),
            "rootfs": {
                "lower": [str(p) for p in layers],
                "upper": str(root / "upper"),
                "work": str(root / "work"),
                "target": str(state / "rootfs"),
            },
            "rootfs_propagation": root_prop,
            "namespaces": {**ns, "pid": pid_mode},
            "cgroup_procs": cg.procs_files,
            "cgroup_self": cg.self_join_files,
            "oom_files": _oom_files(svc, c.cgroup),
            "etc": {
                "/etc/hosts": str(sb_root / "hosts"),
                "/etc/resolv.conf": str(sb_root / "resolv.conf"),
                "/etc/hostname": str(sb_root / "hostname"),
            },
            "shm": str(shm) if shm.is_dir() else "/dev/shm",
            "mounts": mounts,
            "devices": devices,
            "privileged": sc.privileged,
            "readonly_rootfs": sc.readonly_rootfs,
            "masked_paths": masked,
            "readonly_paths": ro_paths,
            "process": {
                "args": argv,
                "env": env,
                "cwd": cfg.working_dir or image_config.get("WorkingDir") or "/",
                "user": user,
                "caps": caps,
                "no_new_privs": sc.no_new_privs,
                "apparmor": apparmor,
                "oom_score_adj": cfg.linux.resources.oom_score_adj,
                "seccomp_bpf": base64.b64encode(bpf).decode() if bpf else "",
                "tty": cfg.tty,
                "stdin": cfg.stdin,
                "stdin_once": cfg.stdin_once,
            },
        }
        # the monitor starts in StartContainer (where containerd runs runc
        # create and start): a created container is its spec, cgroup and dirs
        host.write_file(root / "spec.json", json.dumps(spec, sort_keys=True))
        svc.containers.save(c)
        undo.pop_all()
    log.info("rpc=CreateContainer sandbox=%s container_id=%s name=%s", s.id, cid, c.name)
    return api_pb2.CreateContainerResponse(container_id=cid)


def _oom_files(svc: RuntimeService, rel: str) -> list[str]:
    root = svc.cfg.cgroup_root
    rel = rel.strip("/")
    if (root / "cgroup.controllers").exists():
        return [str(root / rel / "memory.events")]
    return [str(root / "memory" / rel / "memory.oom_control")]


def _stop_signal(cfg: api_pb2.ContainerConfig, image_config: dict[str, Any]) -> int:
    if cfg.stop_signal:
        name = api_pb2.Signal.Name(cfg.stop_signal)
        with contextlib.suppress(AttributeError):
            return int(getattr(signal, name))
    raw = str(image_config.get("StopSignal") or "")
    if raw.isdigit():
        return int(raw)
    if raw:
        name = raw.upper() if raw.upper().startswith("SIG") else "SIG" + raw.upper()
        with contextlib.suppress(AttributeError):
            return int(getattr(signal, name))
    return int(signal.SIGTERM)


def _quiet(fn: Any) -> None:
    try:
        fn()
    except Exception:
        log.exception("undo step failed")
