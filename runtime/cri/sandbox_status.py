"""PodSandboxStatus and the shared conversion of a sandbox record into the
CRI messages (PodSandbox for lists, PodSandboxStatus for status)."""

from __future__ import annotations

import json

from proto.runtime.v1 import api_pb2
from runtime.cri.service import RuntimeService
from runtime.cri.stored_config import cached_decoder
from runtime.store.records import Sandbox, SandboxState


def refresh(svc: RuntimeService, s: Sandbox) -> Sandbox:
    """A READY sandbox whose monitor is gone is NOTREADY. A sandbox still being
    created (RunPodSandbox has reserved it but has no monitor pid yet) is left
    alone: a concurrent list must not condemn it."""
    if (
        s.state == SandboxState.READY
        and s.monitor_pid
        and not svc.host.alive(s.monitor_pid, s.monitor_start)
    ):
        with svc.sandboxes.lock:
            s.transition(SandboxState.NOTREADY)
            svc.sandboxes.save(s)
    return s


_decode_config = cached_decoder(api_pb2.PodSandboxConfig, maxsize=4096)


def config_of(s: Sandbox) -> api_pb2.PodSandboxConfig:
    """The sandbox's config (decoded once per record; callers must not change it)."""
    return _decode_config(s.config_b64)


def state_of(s: Sandbox) -> int:
    return api_pb2.SANDBOX_READY if s.state == SandboxState.READY else api_pb2.SANDBOX_NOTREADY


def to_list_item(s: Sandbox) -> api_pb2.PodSandbox:
    cfg = config_of(s)
    return api_pb2.PodSandbox(
        id=s.id,
        metadata=cfg.metadata,
        state=state_of(s),  # type: ignore[arg-type]
        created_at=s.created_at,
        labels=cfg.labels,
        annotations=cfg.annotations,
        runtime_handler=s.runtime_handler,
    )


def run(
    svc: RuntimeService, req: api_pb2.PodSandboxStatusRequest
) -> api_pb2.PodSandboxStatusResponse:
    s = refresh(svc, svc.sandboxes.get(req.pod_sandbox_id))
    cfg = config_of(s)
    opts = cfg.linux.security_context.namespace_options
    status = api_pb2.PodSandboxStatus(
        id=s.id,
        metadata=cfg.metadata,
        state=state_of(s),  # type: ignore[arg-type]
        created_at=s.created_at,
        network=api_pb2.PodSandboxNetworkStatus(
            ip=s.ip, additional_ips=[api_pb2.PodIP(ip=ip) for ip in s.additional_ips]
        ),
        linux=api_pb2.LinuxPodSandboxStatus(
            namespaces=api_pb2.Namespace(
                options=api_pb2.NamespaceOption(network=opts.network, pid=opts.pid, ipc=opts.ipc)
            )
        ),
        labels=cfg.labels,
        annotations=cfg.annotations,
        runtime_handler=s.runtime_handler,
    )
    info: dict[str, str] = {}
    if req.verbose:
        info["info"] = json.dumps(
            {
                "pid": s.monitor_pid,
                "pid1": s.pid1,
                "netns": str(svc.ns_path(s.id, "net")),
                "cgroup": s.cgroup,
                "hostNetwork": s.host_network,
                "image": "",
                "runtimeHandler": s.runtime_handler,
            }
        )
    return api_pb2.PodSandboxStatusResponse(status=status, info=info)
