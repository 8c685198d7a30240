"""The gRPC RuntimeService servicer: each method only delegates to its RPC
module through `rpc_boundary` (logging and the error table). RPCs not listed
here fall through to the generated base class, which answers UNIMPLEMENTED.
Handlers run in gRPC threads: nothing reachable from here forks or enters a
namespace."""

from __future__ import annotations

from typing import Any

from proto.runtime.v1 import api_pb2_grpc
from runtime.cri import (
    container_attach,
    container_create,
    container_exec,
    container_list,
    container_remove,
    container_reopen_log,
    container_start,
    container_stats,
    container_status,
    container_stop,
    container_update,
    exec_sync,
    runtime_config,
    runtime_config_update,
    sandbox_list,
    sandbox_portforward,
    sandbox_remove,
    sandbox_run,
    sandbox_stats,
    sandbox_status,
    sandbox_stop,
    status,
    version,
)
from runtime.cri.errors import rpc_boundary
from runtime.cri.service import RuntimeService

Ctx = Any


class RuntimeServicer(api_pb2_grpc.RuntimeServiceServicer):
    def __init__(self, svc: RuntimeService) -> None:
        self.svc = svc

    @rpc_boundary("Version")
    def Version(self, request: Any, context: Ctx) -> Any:
        return version.run(self.svc, request)

    @rpc_boundary("Status")
    def Status(self, request: Any, context: Ctx) -> Any:
        return status.run(self.svc, request)

    @rpc_boundary("RuntimeConfig")
    def RuntimeConfig(self, request: Any, context: Ctx) -> Any:
        return runtime_config.run(self.svc, request)

    @rpc_boundary("UpdateRuntimeConfig")
    def UpdateRuntimeConfig(self, request: Any, context: Ctx) -> Any:
        return runtime_config_update.run(self.svc, request)

    @rpc_boundary("RunPodSandbox")
    def RunPodSandbox(self, request: Any, context: Ctx) -> Any:
        return sandbox_run.run(self.svc, request)

    @rpc_boundary("StopPodSandbox")
    def StopPodSandbox(self, request: Any, context: Ctx) -> Any:
        return sandbox_stop.run(self.svc, request)

    @rpc_boundary("RemovePodSandbox")
    def RemovePodSandbox(self, request: Any, context: Ctx) -> Any:
        return sandbox_remove.run(self.svc, request)

    @rpc_boundary("PodSandboxStatus")
    def PodSandboxStatus(self, request: Any, context: Ctx) -> Any:
        return sandbox_status.run(self.svc, request)

    @rpc_boundary("ListPodSandbox")
    def ListPodSandbox(self, request: Any, context: Ctx) -> Any:
        return sandbox_list.run(self.svc, request)

    @rpc_boundary("CreateContainer")
    def CreateContainer(self, request: Any, context: Ctx) -> Any:
        return container_create.run(self.svc, request)

    @rpc_boundary("StartContainer")
    def StartContainer(self, request: Any, context: Ctx) -> Any:
        return container_start.run(self.svc, request)

    @rpc_boundary("StopContainer")
    def StopContainer(self, request: Any, context: Ctx) -> Any:
        return container_stop.run(self.svc, request)

    @rpc_boundary("RemoveContainer")
    def RemoveContainer(self, request: Any, context: Ctx) -> Any:
        return container_remove.run(self.svc, request)

    @rpc_boundary("ContainerStatus")
    def ContainerStatus(self, request: Any, context: Ctx) -> Any:
        return container_status.run(self.svc, request)

    @rpc_boundary("ListContainers")
    def ListContainers(self, request: Any, context: Ctx) -> Any:
        return container_list.run(self.svc, request)

    @rpc_boundary("UpdateContainerResources")
    def UpdateContainerResources(self, request: Any, context: Ctx) -> Any:
        return container_update.run(self.svc, request)

    @rpc_boundary("ReopenContainerLog")
    def ReopenContainerLog(self, request: Any, context: Ctx) -> Any:
        return container_reopen_log.run(self.svc, request)

    @rpc_boundary("ExecSync")
    def ExecSync(self, request: Any, context: Ctx) -> Any:
        return exec_sync.run(self.svc, request)

    @rpc_boundary("ContainerStats")
    def ContainerStats(self, request: Any, context: Ctx) -> Any:
        return container_stats.run(self.svc, request)

    @rpc_boundary("ListContainerStats")
    def ListContainerStats(self, request: Any, context: Ctx) -> Any:
        return container_stats.run_list(self.svc, request)

    @rpc_boundary("PodSandboxStats")
    def PodSandboxStats(self, request: Any, context: Ctx) -> Any:
        return sandbox_stats.run(self.svc, request)

    @rpc_boundary("ListPodSandboxStats")
    def ListPodSandboxStats(self, request: Any, context: Ctx) -> Any:
        return sandbox_stats.run_list(self.svc, request)

    @rpc_boundary("Exec")
    def Exec(self, request: Any, context: Ctx) -> Any:
        return container_exec.run(self.svc, request)

    @rpc_boundary("Attach")
    def Attach(self, request: Any, context: Ctx) -> Any:
        return container_attach.run(self.svc, request)

    @rpc_boundary("PortForward")
    def PortForward(self, request: Any, context: Ctx) -> Any:
        return sandbox_portforward.run(self.svc, request)
