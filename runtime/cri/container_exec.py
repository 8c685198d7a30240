"""Exec: a single-use URL on the streaming server for this command."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.cri.service import RuntimeService


def run(svc: RuntimeService, req: api_pb2.ExecRequest) -> api_pb2.ExecResponse:
    if svc.streaming is None:
        raise errors.Unimplemented("no streaming server is configured")
    c = svc.running(req.container_id)
    if not req.cmd:
        raise errors.InvalidArgument("cmd is required")
    req.container_id = c.id
    return api_pb2.ExecResponse(url=svc.streaming.get_exec(req))
