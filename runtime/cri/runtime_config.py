"""RuntimeConfig: the cgroup driver (cgroupfs)."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime.cri.service import RuntimeService


def run(svc: RuntimeService, req: api_pb2.RuntimeConfigRequest) -> api_pb2.RuntimeConfigResponse:
    return api_pb2.RuntimeConfigResponse(
        linux=api_pb2.LinuxRuntimeConfiguration(cgroup_driver=api_pb2.CGROUPFS)
    )
