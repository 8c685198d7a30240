"""StopContainer: the stop signal, then SIGKILL after `timeout` seconds
(0: at once). An unknown id succeeds; stopping an exited container is a
no-op."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime.cri.service import RuntimeService


def run(svc: RuntimeService, req: api_pb2.StopContainerRequest) -> api_pb2.StopContainerResponse:
    c = svc.containers.find(req.container_id)
    if c is not None:
        with svc.lock(c.id):
            svc.stop_container(c, max(0, req.timeout))
    return api_pb2.StopContainerResponse()
