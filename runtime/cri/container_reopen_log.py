"""ReopenContainerLog: the monitor closes the log file and opens the path
afresh (after the kubelet renamed it for rotation)."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.cri.service import RuntimeService
from runtime.process import spawn


def run(
    svc: RuntimeService, req: api_pb2.ReopenContainerLogRequest
) -> api_pb2.ReopenContainerLogResponse:
    c = svc.running(req.container_id)
    try:
        reply = svc.host.call_monitor(svc.container_state(c.id), {"op": "reopen"}, 10)
    except (OSError, spawn.MonitorError) as exc:
        raise errors.Unknown(f"reopen log of {c.id}: {exc}") from None
    if "error" in reply:
        raise errors.Unknown(f"reopen log of {c.id}: {reply['error']}")
    return api_pb2.ReopenContainerLogResponse()
