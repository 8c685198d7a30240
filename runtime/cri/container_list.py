"""ListContainers with the CRI filter: id (or prefix), sandbox id, state,
labels."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime.cri import container_status, list_filter
from runtime.cri.service import RuntimeService


def run(svc: RuntimeService, req: api_pb2.ListContainersRequest) -> api_pb2.ListContainersResponse:
    f = req.filter
    out = []
    for c in list_filter.containers(svc, f):
        item = container_status.to_list_item(svc.refresh(c))
        if f.HasField("state") and item.state != f.state.state:
            continue
        out.append(item)
    return api_pb2.ListContainersResponse(containers=out)
