"""Attach: a single-use URL on the streaming server (the backend refuses it
until attach is implemented)."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.cri.service import RuntimeService


def run(svc: RuntimeService, req: api_pb2.AttachRequest) -> api_pb2.AttachResponse:
    raise errors.Unimplemented("attach is not supported by skiff yet")
