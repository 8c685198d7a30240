"""StartContainer: start the container's monitor from the saved spec (its
child joins the pod, builds the rootfs and pivots), then let the init exec.
A setup or exec failure (missing binary, bad mount) marks the container
exited with reason StartError and fails the call, as containerd does."""

from __future__ import annotations

import contextlib
import json
import signal
import time
from typing import Any

from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.cri.service import RuntimeService
from runtime.process import spawn
from runtime.store.records import ContainerState


def run(svc: RuntimeService, req: api_pb2.StartContainerRequest) -> api_pb2.StartContainerResponse:
    c = svc.containers.get(req.container_id)
    host = svc.host
    with svc.lock(c.id):
        svc.refresh(c)
        if c.state != ContainerState.CREATED:
            raise errors.FailedPrecondition(f"container {c.id} is {c.state.value}, not created")
        reply: dict[str, Any] = {}
        if not c.monitor_pid:
            root = svc.container_root(c.id)
            try:
                # the monitor starts the init as soon as its root is ready
                # and reports the outcome with its pids
                # (CreateContainer wrote the spec)
                rep = host.spawn_monitor(
                    "container-start", root / "spec.json", root / "monitor.log"
                )
                if rep.get("start_error"):
                    reply = {"error": rep["start_error"]}
                elif rep.get("started_at"):
                    reply = rep
                with svc.containers.lock:
                    c.monitor_pid = int(rep["pid"])
                    c.monitor_start = host.start_time(c.monitor_pid)
                    c.init_pid = int(rep["init_pid"])
                    if not reply:  # (otherwise saved below with the outcome)
                        svc.containers.save(c)
            except (OSError, ValueError, spawn.MonitorError) as exc:
                reply = {"error": str(exc)}
        if not reply:
            try:
                reply = host.call_monitor(svc.container_state(c.id), {"op": "start"}, 30)
            except (OSError, spawn.MonitorError) as exc:
                reply = {"error": f"monitor unreachable: {exc}"}
        if "error" in reply:
            if c.monitor_pid and not host.wait_exit(c.monitor_pid, 5):
                # a monitor still waiting for "start" gets none: end it
                host.kill(c.init_pid, signal.SIGKILL)
                host.kill(c.monitor_pid, signal.SIGKILL)
                host.wait_exit(c.monitor_pid, 5)
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
            c.user = dict(reply.get("user") or {})
            c.transition(ContainerState.RUNNING)
            svc.containers.save(c)
    return api_pb2.StartContainerResponse()
