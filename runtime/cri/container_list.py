"""ListContainers with the CRI filter: id (or prefix), sandbox id, state,
labels."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime.cri import container_status
from runtime.cri.service import RuntimeService


def run(svc: RuntimeService, req: api_pb2.ListContainersRequest) -> api_pb2.ListContainersResponse:
    f = req.filter
    out = []
    for c in svc.containers.list():
        if f.id and not c.id.startswith(f.id):
            continue
        if f.pod_sandbox_id and not c.sandbox_id.startswith(f.pod_sandbox_id):
            continue
        # labels first: they are cheap, a refresh reads /proc
        labels = container_status.config_of(c).labels
        if any(labels.get(k) != v for k, v in f.label_selector.items()):
            continue
        item = container_status.to_list_item(svc.refresh(c))
        if f.HasField("state") and item.state != f.state.state:
            continue
        out.append(item)
    return api_pb2.ListContainersResponse(containers=out)
