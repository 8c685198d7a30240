"""ExecSync: run a command in a running container's namespaces and cgroup
through its monitor; on timeout the monitor kills the exec'd process group
and the call fails with DEADLINE_EXCEEDED."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.cri.service import RuntimeService
from runtime.process import spawn
from runtime.store.records import ContainerState


def run(svc: RuntimeService, req: api_pb2.ExecSyncRequest) -> api_pb2.ExecSyncResponse:
    c = svc.refresh(svc.containers.get(req.container_id))
    if c.state != ContainerState.RUNNING:
        raise errors.FailedPrecondition(f"container {c.id} is {c.state.value}, not running")
    if not req.cmd:
        raise errors.InvalidArgument("cmd is required")
    try:
        res = spawn.exec_sync(svc.container_state(c.id), list(req.cmd), float(req.timeout))
    except (OSError, spawn.MonitorError) as exc:
        raise errors.Unknown(f"exec in container {c.id}: {exc}") from None
    if res.timed_out:
        raise errors.DeadlineExceeded(f"command {list(req.cmd)!r} timed out after {req.timeout}s")
    if res.error:
        raise errors.Unknown(f"exec in container {c.id} failed: {res.error}")
    return api_pb2.ExecSyncResponse(stdout=res.stdout, stderr=res.stderr, exit_code=res.exit_code)
