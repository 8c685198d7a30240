"""UpdateContainerResources: apply new limits to the live cgroup and record
them."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.cri import container_spec
from runtime.cri.service import RuntimeService
from runtime.store.records import ContainerState


def run(
    svc: RuntimeService, req: api_pb2.UpdateContainerResourcesRequest
) -> api_pb2.UpdateContainerResourcesResponse:
    c = svc.refresh(svc.containers.get(req.container_id))
    if c.state == ContainerState.EXITED:
        raise errors.FailedPrecondition(f"container {c.id} has exited")
    if not req.HasField("linux"):
        return api_pb2.UpdateContainerResourcesResponse()
    res = container_spec.resources(req.linux, 0)
    try:
        svc.cgroup(c.cgroup).apply(res)
    except OSError as exc:
        raise errors.InvalidArgument(f"resources refused by the kernel: {exc}") from None
    with svc.containers.lock:
        new = container_spec.resources_to_json(res, req.linux.oom_score_adj)
        c.resources = {k: (v or c.resources.get(k, v)) for k, v in new.items()}
        svc.containers.save(c)
    return api_pb2.UpdateContainerResourcesResponse()
