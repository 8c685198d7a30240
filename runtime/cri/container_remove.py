"""RemoveContainer: kill it if it still runs, then remove its cgroup, its
writable layer, its state and its image hold. An unknown id succeeds."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime.cri.service import RuntimeService


def run(
    svc: RuntimeService, req: api_pb2.RemoveContainerRequest
) -> api_pb2.RemoveContainerResponse:
    c = svc.containers.find(req.container_id)
    if c is not None:
        with svc.lock(c.id):
            svc.destroy_container(c)
    return api_pb2.RemoveContainerResponse()
