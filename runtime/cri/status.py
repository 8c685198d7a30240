"""Status: RuntimeReady, and NetworkReady with the CNI client's reason when
the network is not ready."""

from __future__ import annotations

import json

from proto.runtime.v1 import api_pb2
from runtime.cri.service import RuntimeService


def network_reason(svc: RuntimeService) -> str | None:
    if svc.network is None:
        return "no CNI client is available"
    try:
        return svc.network.status()
    except Exception as exc:
        return f"CNI status failed: {exc}"


def run(svc: RuntimeService, req: api_pb2.StatusRequest) -> api_pb2.StatusResponse:
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
