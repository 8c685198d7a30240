"""PortForward: a single-use URL on the streaming server for this sandbox."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.cri.service import RuntimeService


def run(svc: RuntimeService, req: api_pb2.PortForwardRequest) -> api_pb2.PortForwardResponse:
    if svc.streaming is None:
        raise errors.Unimplemented("no streaming server is configured")
    s = svc.sandboxes.get(req.pod_sandbox_id)
    req.pod_sandbox_id = s.id
    return api_pb2.PortForwardResponse(url=svc.streaming.get_port_forward(req))
