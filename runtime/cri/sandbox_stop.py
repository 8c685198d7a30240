"""StopPodSandbox: stop every container of the pod, tear down its network,
end the sandbox monitor and unpin its namespaces. An unknown id succeeds,
as containerd's does; stopping twice is a no-op."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime.cri.service import RuntimeService


def run(svc: RuntimeService, req: api_pb2.StopPodSandboxRequest) -> api_pb2.StopPodSandboxResponse:
    s = svc.sandboxes.find(req.pod_sandbox_id)
    if s is not None:
        with svc.lock(s.id):
            svc.stop_sandbox(s)
    return api_pb2.StopPodSandboxResponse()
