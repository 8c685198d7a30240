"""Attach: a single-use URL on the streaming server for this container."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.cri.service import RuntimeService


def run(svc: RuntimeService, req: api_pb2.AttachRequest) -> api_pb2.AttachResponse:
    if svc.streaming is None:
        raise errors.Unimplemented("no streaming server is configured")
    c = svc.running(req.container_id)
    req.container_id = c.id
    return api_pb2.AttachResponse(url=svc.streaming.get_attach(req))
