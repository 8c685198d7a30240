"""ListPodSandbox with the CRI filter: id (or unique prefix), state, labels."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime.cri import list_filter, sandbox_status
from runtime.cri.service import RuntimeService


def run(svc: RuntimeService, req: api_pb2.ListPodSandboxRequest) -> api_pb2.ListPodSandboxResponse:
    f = req.filter
    items = []
    for s in list_filter.sandboxes(svc, f):
        sandbox_status.refresh(svc, s)
        item = sandbox_status.to_list_item(s)
        if f.HasField("state") and item.state != f.state.state:
            continue
        items.append(item)
    return api_pb2.ListPodSandboxResponse(items=items)
