"""RemovePodSandbox: stop it if needed, remove its containers, its cgroup
and its state. An unknown id succeeds."""

from __future__ import annotations

import contextlib

from proto.runtime.v1 import api_pb2
from runtime.cri.service import RuntimeService
from runtime.store.records import SandboxState


def run(
    svc: RuntimeService, req: api_pb2.RemovePodSandboxRequest
) -> api_pb2.RemovePodSandboxResponse:
    s = svc.sandboxes.find(req.pod_sandbox_id)
    if s is None:
        return api_pb2.RemovePodSandboxResponse()
    with svc.lock(s.id):
        if s.state == SandboxState.READY:
            svc.stop_sandbox(s)
        for c in svc.containers.list():
            if c.sandbox_id == s.id:
                svc.destroy_container(c)
        cg = svc.cgroup(s.cgroup)
        with contextlib.suppress(OSError):
            cg.kill_all()
        svc.janitor.discard(svc.sandbox_state(s.id))
        with svc.sandboxes.lock:
            svc.janitor.discard(svc.sandbox_root(s.id))
            svc.sandboxes.forget(s.id)
        svc.janitor.destroy_cgroup(cg)
    return api_pb2.RemovePodSandboxResponse()
