"""An in-memory CRI runtime (RuntimeService + ImageService) for tests.

It keeps sandboxes, containers and images in dicts, records every call, and
lets a test inject errors per RPC (`fail_next["PullImage"] = (code, msg)`),
make containers exit (`exit_container`), and program ExecSync results.
Exec, Attach and PortForward answer UNIMPLEMENTED unless a test sets
`streaming` to a streaming server (runtime.streaming.StreamingServer, e.g.
with the host-process backend): then they check the container or sandbox
and return that server's URL, as a real runtime does. It is
served over a real gRPC unix socket by `serve_fake_runtime`, so clients are
tested through the wire. It runs no processes and touches nothing on disk
besides the socket.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from proto.runtime.v1 import api_pb2 as cri
from proto.runtime.v1 import api_pb2_grpc as cri_grpc


def _now_ns() -> int:
    return time.time_ns()


@dataclass
class FakeSandbox:
    id: str
    config: cri.PodSandboxConfig
    state: cri.PodSandboxState.ValueType = cri.SANDBOX_READY
    created_at: int = field(default_factory=_now_ns)
    ip: str = ""


@dataclass
class FakeContainer:
    id: str
    sandbox_id: str
    config: cri.ContainerConfig
    state: cri.ContainerState.ValueType = cri.CONTAINER_CREATED
    created_at: int = field(default_factory=_now_ns)
    started_at: int = 0
    finished_at: int = 0
    exit_code: int = 0
    reason: str = ""
    message: str = ""
    image_ref: str = ""


# The generated servicers declare every RPC abstract for type checkers; at
# run time their defaults answer UNIMPLEMENTED, which is what the fake wants
# for the RPCs it does not model.
_RuntimeBase: Any = cri_grpc.RuntimeServiceServicer
_ImageBase: Any = cri_grpc.ImageServiceServicer


class FakeRuntime(_RuntimeBase, _ImageBase):  # type: ignore[misc]
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.sandboxes: dict[str, FakeSandbox] = {}
        self.containers: dict[str, FakeContainer] = {}
        self.images: dict[str, str] = {}  # reference -> image id
        self.calls: list[tuple[str, Any]] = []
        self.fail_next: dict[str, tuple[grpc.StatusCode, str]] = {}
        # Every call of these RPCs fails until the entry is removed (a wedged runtime).
        self.fail_always: dict[str, tuple[grpc.StatusCode, str]] = {}
        self.missing_images: set[str] = set()
        self.exec_results: dict[tuple[str, ...], tuple[int, bytes, bytes]] = {}
        self.start_failures: dict[str, str] = {}  # container name -> message
        # has get_exec/get_attach/get_port_forward(request) -> url, as StreamingServer
        self.streaming: Any = None
        self._ids = itertools.count(1)
        self._ips = itertools.count(2)

    # helpers for tests
    def _record(self, name: str, request: Any, context: grpc.ServicerContext) -> None:
        with self.lock:
            self.calls.append((name, request))
            failure = self.fail_next.pop(name, None) or self.fail_always.get(name)
        if failure is not None:
            context.abort(*failure)

    def call_names(self) -> list[str]:
        with self.lock:
            return [name for name, _ in self.calls]

    def exit_container(self, container_id: str, code: int, reason: str = "") -> None:
        with self.lock:
            c = self.containers[container_id]
            c.state = cri.CONTAINER_EXITED
            c.exit_code = code
            c.reason = reason or ("Completed" if code == 0 else "Error")
            c.finished_at = _now_ns()

    def container_by_name(self, name: str) -> list[FakeContainer]:
        with self.lock:
            found = [c for c in self.containers.values() if c.config.metadata.name == name]
        return sorted(found, key=lambda c: c.config.metadata.attempt, reverse=True)

    def _new_id(self) -> str:
        return f"{next(self._ids):064x}"

    def _sandbox(self, sandbox_id: str, context: grpc.ServicerContext) -> FakeSandbox:
        sb = self.sandboxes.get(sandbox_id)
        if sb is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"sandbox {sandbox_id} not found")
        return sb

    def _container(self, container_id: str, context: grpc.ServicerContext) -> FakeContainer:
        c = self.containers.get(container_id)
        if c is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"container {container_id} not found")
        return c

    # RuntimeService
    def Version(
        self, request: cri.VersionRequest, context: grpc.ServicerContext
    ) -> cri.VersionResponse:
        self._record("Version", request, context)
        return cri.VersionResponse(
            version="0.1.0", runtime_name="fake", runtime_version="0.1.0", runtime_api_version="v1"
        )

    def Status(
        self, request: cri.StatusRequest, context: grpc.ServicerContext
    ) -> cri.StatusResponse:
        self._record("Status", request, context)
        conds = [
            cri.RuntimeCondition(type="RuntimeReady", status=True),
            cri.RuntimeCondition(type="NetworkReady", status=True),
        ]
        return cri.StatusResponse(status=cri.RuntimeStatus(conditions=conds))

    def RunPodSandbox(
        self, request: cri.RunPodSandboxRequest, context: grpc.ServicerContext
    ) -> cri.RunPodSandboxResponse:
        self._record("RunPodSandbox", request, context)
        with self.lock:
            sb = FakeSandbox(
                id=self._new_id(), config=request.config, ip=f"10.88.0.{next(self._ips)}"
            )
            self.sandboxes[sb.id] = sb
        return cri.RunPodSandboxResponse(pod_sandbox_id=sb.id)

    def StopPodSandbox(
        self, request: cri.StopPodSandboxRequest, context: grpc.ServicerContext
    ) -> cri.StopPodSandboxResponse:
        self._record("StopPodSandbox", request, context)
        with self.lock:
            sb = self.sandboxes.get(request.pod_sandbox_id)
            if sb is not None:
                sb.state = cri.SANDBOX_NOTREADY
                for c in self.containers.values():
                    if c.sandbox_id == sb.id and c.state == cri.CONTAINER_RUNNING:
                        self.exit_container(c.id, 137)
        return cri.StopPodSandboxResponse()

    def RemovePodSandbox(
        self, request: cri.RemovePodSandboxRequest, context: grpc.ServicerContext
    ) -> cri.RemovePodSandboxResponse:
        self._record("RemovePodSandbox", request, context)
        with self.lock:
            self.sandboxes.pop(request.pod_sandbox_id, None)
            for cid in [
                c.id for c in self.containers.values() if c.sandbox_id == request.pod_sandbox_id
            ]:
                del self.containers[cid]
        return cri.RemovePodSandboxResponse()

    def PodSandboxStatus(
        self, request: cri.PodSandboxStatusRequest, context: grpc.ServicerContext
    ) -> cri.PodSandboxStatusResponse:
        self._record("PodSandboxStatus", request, context)
        with self.lock:
            sb = self._sandbox(request.pod_sandbox_id, context)
            return cri.PodSandboxStatusResponse(
                status=cri.PodSandboxStatus(
                    id=sb.id,
                    metadata=sb.config.metadata,
                    state=sb.state,
                    created_at=sb.created_at,
                    network=cri.PodSandboxNetworkStatus(ip=sb.ip),
                    labels=sb.config.labels,
                    annotations=sb.config.annotations,
                )
            )

    def ListPodSandbox(
        self, request: cri.ListPodSandboxRequest, context: grpc.ServicerContext
    ) -> cri.ListPodSandboxResponse:
        self._record("ListPodSandbox", request, context)
        flt = request.filter
        with self.lock:
            items = [
                cri.PodSandbox(
                    id=sb.id,
                    metadata=sb.config.metadata,
                    state=sb.state,
                    created_at=sb.created_at,
                    labels=sb.config.labels,
                    annotations=sb.config.annotations,
                )
                for sb in self.sandboxes.values()
                if all(sb.config.labels.get(k) == v for k, v in flt.label_selector.items())
                and (not flt.id or sb.id == flt.id)
            ]
        return cri.ListPodSandboxResponse(items=items)

    def CreateContainer(
        self, request: cri.CreateContainerRequest, context: grpc.ServicerContext
    ) -> cri.CreateContainerResponse:
        self._record("CreateContainer", request, context)
        with self.lock:
            self._sandbox(request.pod_sandbox_id, context)
            image = request.config.image.image
            ref = self.images.get(image, image if image.startswith("sha256:") else "")
            if not ref:
                context.abort(grpc.StatusCode.NOT_FOUND, f"image {image!r} not found")
            c = FakeContainer(
                id=self._new_id(),
                sandbox_id=request.pod_sandbox_id,
                config=request.config,
                image_ref=ref,
            )
            self.containers[c.id] = c
        return cri.CreateContainerResponse(container_id=c.id)

    def StartContainer(
        self, request: cri.StartContainerRequest, context: grpc.ServicerContext
    ) -> cri.StartContainerResponse:
        self._record("StartContainer", request, context)
        with self.lock:
            c = self._container(request.container_id, context)
            failure = self.start_failures.get(c.config.metadata.name)
            if failure is not None:
                c.state, c.exit_code, c.reason, c.message = (
                    cri.CONTAINER_EXITED,
                    128,
                    "StartError",
                    failure,
                )
                c.finished_at = _now_ns()
                context.abort(grpc.StatusCode.UNKNOWN, failure)
            c.state = cri.CONTAINER_RUNNING
            c.started_at = _now_ns()
        return cri.StartContainerResponse()

    def StopContainer(
        self, request: cri.StopContainerRequest, context: grpc.ServicerContext
    ) -> cri.StopContainerResponse:
        self._record("StopContainer", request, context)
        with self.lock:
            c = self.containers.get(request.container_id)
            if c is not None and c.state == cri.CONTAINER_RUNNING:
                self.exit_container(c.id, 143 if request.timeout else 137)
        return cri.StopContainerResponse()

    def RemoveContainer(
        self, request: cri.RemoveContainerRequest, context: grpc.ServicerContext
    ) -> cri.RemoveContainerResponse:
        self._record("RemoveContainer", request, context)
        with self.lock:
            self.containers.pop(request.container_id, None)
        return cri.RemoveContainerResponse()

    def ListContainers(
        self, request: cri.ListContainersRequest, context: grpc.ServicerContext
    ) -> cri.ListContainersResponse:
        self._record("ListContainers", request, context)
        flt = request.filter
        with self.lock:
            out = [
                cri.Container(
                    id=c.id,
                    pod_sandbox_id=c.sandbox_id,
                    metadata=c.config.metadata,
                    image=c.config.image,
                    image_ref=c.image_ref,
                    state=c.state,
                    created_at=c.created_at,
                    labels=c.config.labels,
                    annotations=c.config.annotations,
                )
                for c in self.containers.values()
                if (not flt.pod_sandbox_id or c.sandbox_id == flt.pod_sandbox_id)
                and all(c.config.labels.get(k) == v for k, v in flt.label_selector.items())
            ]
        return cri.ListContainersResponse(containers=out)

    def ContainerStatus(
        self, request: cri.ContainerStatusRequest, context: grpc.ServicerContext
    ) -> cri.ContainerStatusResponse:
        self._record("ContainerStatus", request, context)
        with self.lock:
            c = self._container(request.container_id, context)
            return cri.ContainerStatusResponse(
                status=cri.ContainerStatus(
                    id=c.id,
                    metadata=c.config.metadata,
                    state=c.state,
                    created_at=c.created_at,
                    started_at=c.started_at,
                    finished_at=c.finished_at,
                    exit_code=c.exit_code,
                    image=c.config.image,
                    image_ref=c.image_ref,
                    reason=c.reason,
                    message=c.message,
                    labels=c.config.labels,
                    annotations=c.config.annotations,
                    log_path=c.config.log_path,
                    mounts=c.config.mounts,
                    resources=cri.ContainerResources(linux=c.config.linux.resources),
                )
            )

    def UpdateContainerResources(
        self, request: cri.UpdateContainerResourcesRequest, context: grpc.ServicerContext
    ) -> cri.UpdateContainerResourcesResponse:
        self._record("UpdateContainerResources", request, context)
        with self.lock:
            c = self._container(request.container_id, context)
            if c.state != cri.CONTAINER_RUNNING:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"container {c.id} has exited")
            c.config.linux.resources.CopyFrom(request.linux)
        return cri.UpdateContainerResourcesResponse()

    def ExecSync(
        self, request: cri.ExecSyncRequest, context: grpc.ServicerContext
    ) -> cri.ExecSyncResponse:
        self._record("ExecSync", request, context)
        with self.lock:
            c = self._container(request.container_id, context)
            if c.state != cri.CONTAINER_RUNNING:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "container is not running")
            code, out, err = self.exec_results.get(tuple(request.cmd), (0, b"", b""))
        return cri.ExecSyncResponse(exit_code=code, stdout=out, stderr=err)

    def _streaming_container(self, container_id: str, context: grpc.ServicerContext) -> Any:
        if self.streaming is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "no streaming server in this fake")
        with self.lock:
            c = self._container(container_id, context)
            if c.state != cri.CONTAINER_RUNNING:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "container is not running")
        return self.streaming

    def Exec(self, request: cri.ExecRequest, context: grpc.ServicerContext) -> cri.ExecResponse:
        self._record("Exec", request, context)
        streaming = self._streaming_container(request.container_id, context)
        return cri.ExecResponse(url=streaming.get_exec(request))

    def Attach(
        self, request: cri.AttachRequest, context: grpc.ServicerContext
    ) -> cri.AttachResponse:
        self._record("Attach", request, context)
        streaming = self._streaming_container(request.container_id, context)
        return cri.AttachResponse(url=streaming.get_attach(request))

    def PortForward(
        self, request: cri.PortForwardRequest, context: grpc.ServicerContext
    ) -> cri.PortForwardResponse:
        self._record("PortForward", request, context)
        if self.streaming is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "no streaming server in this fake")
        with self.lock:
            self._sandbox(request.pod_sandbox_id, context)
        return cri.PortForwardResponse(url=self.streaming.get_port_forward(request))

    def UpdateRuntimeConfig(
        self, request: cri.UpdateRuntimeConfigRequest, context: grpc.ServicerContext
    ) -> cri.UpdateRuntimeConfigResponse:
        self._record("UpdateRuntimeConfig", request, context)
        return cri.UpdateRuntimeConfigResponse()

    def ListContainerStats(
        self, request: cri.ListContainerStatsRequest, context: grpc.ServicerContext
    ) -> cri.ListContainerStatsResponse:
        self._record("ListContainerStats", request, context)
        return cri.ListContainerStatsResponse()

    # ImageService
    def PullImage(
        self, request: cri.PullImageRequest, context: grpc.ServicerContext
    ) -> cri.PullImageResponse:
        self._record("PullImage", request, context)
        ref = request.image.image
        if ref in self.missing_images:
            context.abort(grpc.StatusCode.NOT_FOUND, f"pulling {ref}: manifest unknown")
        with self.lock:
            image_id = self.images.setdefault(ref, "sha256:" + f"{abs(hash(ref)):064x}"[:64])
        return cri.PullImageResponse(image_ref=image_id)

    def ImageStatus(
        self, request: cri.ImageStatusRequest, context: grpc.ServicerContext
    ) -> cri.ImageStatusResponse:
        self._record("ImageStatus", request, context)
        with self.lock:
            image_id = self.images.get(request.image.image)
        if image_id is None:
            return cri.ImageStatusResponse()
        return cri.ImageStatusResponse(
            image=cri.Image(id=image_id, repo_tags=[request.image.image], size=1 << 20)
        )

    def ListImages(
        self, request: cri.ListImagesRequest, context: grpc.ServicerContext
    ) -> cri.ListImagesResponse:
        self._record("ListImages", request, context)
        with self.lock:
            return cri.ListImagesResponse(
                images=[
                    cri.Image(id=i, repo_tags=[r], size=1 << 20) for r, i in self.images.items()
                ]
            )


@contextmanager
def serve_fake_runtime(
    socket_path: Path, runtime: FakeRuntime | None = None
) -> Iterator[FakeRuntime]:
    fake = runtime or FakeRuntime()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    cri_grpc.add_RuntimeServiceServicer_to_server(fake, server)
    cri_grpc.add_ImageServiceServicer_to_server(fake, server)
    server.add_insecure_port(f"unix://{socket_path}")
    server.start()
    try:
        yield fake
    finally:
        server.stop(grace=None).wait()


__all__ = ["FakeContainer", "FakeRuntime", "FakeSandbox", "serve_fake_runtime"]
