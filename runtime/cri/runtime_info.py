"""Version, Status, RuntimeConfig and UpdateRuntimeConfig: what the runtime
is and whether it and its network are ready."""

from __future__ import annotations

import json

from proto.runtime.v1 import api_pb2
from runtime.cri.service import RuntimeService

RUNTIME_NAME = "skiff"
RUNTIME_VERSION = "0.1.0"
API_VERSION = "v1"


def version(svc: RuntimeService, req: api_pb2.VersionRequest) -> api_pb2.VersionResponse:
    return api_pb2.VersionResponse(
        version="0.1.0",
        runtime_name=RUNTIME_NAME,
        runtime_version=RUNTIME_VERSION,
        runtime_api_version=API_VERSION,
    )


def network_reason(svc: RuntimeService) -> str | None:
    if svc.network is None:
        return "no CNI client is available"
    try:
        return svc.network.status()
    except Exception as exc:
        return f"CNI status failed: {exc}"


def status(svc: RuntimeService, req: api_pb2.StatusRequest) -> api_pb2.StatusResponse:
    reason = network_reason(svc)
    conds = [
        api_pb2.RuntimeCondition(type="RuntimeReady", status=True),
        api_pb2.RuntimeCondition(
            type="NetworkReady",
            status=reason is None,
            reason="" if reason is None else "NetworkPluginNotReady",
            message=reason or "",
        ),
    ]
    info: dict[str, str] = {}
    if req.verbose:
        info["config"] = json.dumps(
            {
                "root": str(svc.cfg.root),
                "state": str(svc.cfg.state),
                "cgroupParent": svc.cfg.cgroup_parent,
                "cniConfDir": str(svc.cfg.cni_conf_dir),
                "podCIDR": svc.pod_cidr,
            }
        )
    return api_pb2.StatusResponse(
        status=api_pb2.RuntimeStatus(conditions=conds),
        info=info,
        runtime_handlers=[api_pb2.RuntimeHandler(name="")],
    )


def runtime_config(
    svc: RuntimeService, req: api_pb2.RuntimeConfigRequest
) -> api_pb2.RuntimeConfigResponse:
    return api_pb2.RuntimeConfigResponse(
        linux=api_pb2.LinuxRuntimeConfiguration(cgroup_driver=api_pb2.CGROUPFS)
    )


def update_runtime_config(
    svc: RuntimeService, req: api_pb2.UpdateRuntimeConfigRequest
) -> api_pb2.UpdateRuntimeConfigResponse:
    svc.pod_cidr = req.runtime_config.network_config.pod_cidr
    return api_pb2.UpdateRuntimeConfigResponse()
