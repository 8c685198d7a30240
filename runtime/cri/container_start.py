"""StartContainer: tell the container's monitor to let the init exec. An
exec failure (missing binary, bad user) marks the container exited with
reason StartError and fails the call, as containerd does."""

from __future__ import annotations

import contextlib
import json
import time

from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.cri.service import RuntimeService, wait_exit
from runtime.process import spawn
from runtime.store.records import ContainerState


def run(svc: RuntimeService, req: api_pb2.StartContainerRequest) -> api_pb2.StartContainerResponse:
    c = svc.containers.get(req.container_id)
    with svc.lock(c.id):
        svc.refresh(c)
        if c.state != ContainerState.CREATED:
            raise errors.FailedPrecondition(f"container {c.id} is {c.state.value}, not created")
        try:
            reply = spawn.call(svc.container_state(c.id), {"op": "start"}, timeout=30)
        except (OSError, spawn.MonitorError) as exc:
            reply = {"error": f"monitor unreachable: {exc}"}
        if "error" in reply:
            wait_exit(c.monitor_pid, 5)
            message = str(reply["error"])
            with contextlib.suppress(OSError, ValueError):
                info = json.loads((svc.container_root(c.id) / "exit.json").read_text())
                message = str(info.get("start_error") or message)
            with svc.containers.lock:
                c.reason = "StartError"
                c.message = message
                c.exit_code = 128
                c.finished_at = time.time_ns()
                with contextlib.suppress(errors.FailedPrecondition):
                    c.transition(ContainerState.EXITED)
                svc.containers.save(c)
            raise errors.InvalidArgument(f"starting container {c.id}: {message}")
        with svc.containers.lock:
            c.started_at = int(reply.get("started_at") or time.time_ns())
            c.transition(ContainerState.RUNNING)
            svc.containers.save(c)
    return api_pb2.StartContainerResponse()
