"""UpdateRuntimeConfig: remember the pod CIDR the kubelet hands down."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime.cri.service import RuntimeService


def run(
    svc: RuntimeService, req: api_pb2.UpdateRuntimeConfigRequest
) -> api_pb2.UpdateRuntimeConfigResponse:
    svc.pod_cidr = req.runtime_config.network_config.pod_cidr
    return api_pb2.UpdateRuntimeConfigResponse()
